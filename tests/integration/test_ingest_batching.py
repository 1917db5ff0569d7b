"""Batching never changes the transcript (issue 31).

A runner batches its stdout lines into requests by time, so the same agent run reaches
the server in a different split on a busy and on an idle machine, and a runner unsure of
its last request sends it again. For every fixture stream (the public captures under
tests/fixtures/streams, the real CLIs' under tests/fixtures/captures, Claude's interactive
ones under tests/fixtures/interactive) and
every session kind, any split into requests, with re-sends of earlier requests under their
seqs, must leave the same rows, counters, usage, evidence, tool results (each in the same
place in the transcript), open turn and live events as the whole stream posted at once:
before completion and after it.

The splits are drawn by hypothesis with a seed of each stream's own, so a run is
reproducible; TURNLOG_SPLIT_EXAMPLES sets how many are drawn per stream on SQLite (a
quarter of it on PostgreSQL; CI keeps it small, raise it for a deeper search).
"""
import json
import os
import zlib
from datetime import datetime
from datetime import timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import seed
from hypothesis import settings
from hypothesis import strategies as st

from app.core.records import Chunk
from app.db import writing
from app.services import ingest
from app.services import sessions
from tests import figures

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = sorted([*FIXTURES.glob("streams/*/*.jsonl"), *FIXTURES.glob("captures/*/*.jsonl"),
                *FIXTURES.glob("interactive/*.jsonl")])
# Runs that printed the same lines twice (`codex exec resume` after a run that failed,
# or answered, alike): issue 31's example of a transcript that depended on the split,
# the second run taken for a copy of the first in some splits only.
TWICE = ("captures/codex-0.169.0/usage_limit.jsonl", "captures/codex-0.169.0/plain.jsonl",
         "captures/gemini-0.61.0/api_error.jsonl")
# Every session kind a runner declares; chat, agent and terminal are ordinary, the
# workflow with an id autonomous (flush_policy.policy_for).
KINDS = {"chat": ("chat", {}), "agent": ("agent", {}), "terminal": ("terminal", {}),
         "workflow": ("workflow", {"workflow_id": "wf-splits"})}
EXAMPLES = int(os.environ.get("TURNLOG_SPLIT_EXAMPLES", "8"))
# One reading of the clock for every request: a split changes which lines share a
# request, and each request's lines are stamped with its time, so a moving clock would
# tell splits apart by their timestamps alone (a difference the contract allows).
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
RETENTION_SECONDS = 3600


def provider_of(path):
    """The provider whose parser reads the stream: the fixture's folder names it."""
    folder = path.parent.name
    if folder == "interactive":
        return path.stem.split("_", 1)[0]
    return folder.rsplit("-", 1)[0] if "-" in folder else folder


def lines_of(path):
    return path.read_text(encoding="utf-8").splitlines()


def _streams():
    """(name, provider, lines) of every stream the test posts."""
    found = [(f"{path.parent.name}/{path.stem}", provider_of(path), lines_of(path))
             for path in FILES]
    for name in TWICE:
        path = FIXTURES / name
        found.append((f"{path.parent.name}/{path.stem}_twice", provider_of(path),
                      lines_of(path) * 2))
    return found


STREAMS = _streams()
# The look-ups of stored keys run only for lines that may be copies: the id-less ones
ON_EACH_BACKEND = [stream for stream in STREAMS
                   if stream[0].endswith("_twice") or stream[0] == "codex/item_states"]


@st.composite
def requests(draw, count):
    """The requests a runner might make of `count` lines: (first seq, end seq) ranges whose
    ends rise to `count`, each starting anywhere from the line after the previous end back
    to line 0 (lines re-sent under their seqs, as after a lost acknowledgement), with now
    and then a request that re-sends an earlier range only."""
    ends = sorted(draw(st.sets(st.integers(1, count - 1), max_size=count - 1))) if count > 1 \
        else []
    made, done = [], 0
    for end in [*ends, count]:
        if done and draw(st.integers(0, 4)) == 0:
            start = draw(st.integers(0, done - 1))
            made.append((start, draw(st.integers(start + 1, done))))
        start = done if draw(st.integers(0, 2)) else draw(st.integers(0, done))
        made.append((start, end))
        done = end
    return made


def _post(sid, lines, made):
    for start, end in made:
        chunks = [Chunk(lines[seq], "stdout", seq) for seq in range(start, end)]
        ingest.ingest_output(sid, chunks, writing(), retention_seconds=RETENTION_SECONDS,
                             clock=lambda: NOW)


def _decoded(value):
    return json.loads(value) if isinstance(value, str) else value


def _events(stored, place):
    """Stored live events (`<name> <data JSON>` a line) as (name, data), the row id an
    event names replaced by the row's place in the transcript."""
    if stored is None:
        return None
    events = []
    for line in stored.splitlines():
        name, _, data = line.partition(" ")
        data = json.loads(data) if data else None
        if isinstance(data, dict) and data.get("message_id") is not None:
            data = {**data, "message_id": ("row", place.get(data["message_id"]))}
        events.append((name, data))
    return events


def state(rows, sid):
    """Everything ingest wrote for the session, read back with SQL, without the session
    id (each split runs in a session of its own) or row ids (which other sessions'
    rows push up)."""
    session = rows(
        "SELECT status, exit_code, message_count, conversation_turn_count,"
        " visible_message_count, next_event_index, output_bytes, max_seq,"
        " transcript_input_tokens, transcript_output_tokens, transcript_cache_read_tokens,"
        " transcript_cache_creation_tokens, transcript_cost_usd, turn_state"
        " FROM agent_sessions WHERE session_id = ?", sid)[0]
    # The cost is a float sum: the requests' partial sums may differ in the last bit.
    session = (*session[:12], round(session[12], 9), session[13])
    messages = rows("SELECT id, role, content, content_blocks, metadata, source, turn_key,"
                    " timestamp FROM session_messages WHERE session_id = ? ORDER BY id", sid)
    place = {row[0]: n for n, row in enumerate(messages)}
    return {
        "session": (*session[:-1], _decoded(session[-1])),
        "rows": [(role, content, _decoded(blocks), _decoded(metadata), source, key, stamp)
                 for _, role, content, blocks, metadata, source, key, stamp in messages],
        "turns": rows("SELECT turn_key, closed_at FROM session_turns WHERE session_id = ?"
                      " ORDER BY turn_key", sid),
        "open_turn_parts": [(n, _decoded(part)) for n, part in rows(
            "SELECT part_index, part FROM session_turn_parts WHERE session_id = ?"
            " ORDER BY part_index", sid)],
        "evidence": rows(
            "SELECT turn_id, evidence_id, command, exit_code, is_error, first_event_index,"
            " last_event_index, output_head, output_tail, output_bytes, test_summary"
            " FROM session_evidence WHERE session_id = ? ORDER BY id", sid),
        # where each sits: its own row, or the row it follows, by their place (0: none)
        "tool_results": [(*row[:-2], ("row", place.get(row[-2])), ("after", place.get(row[-1])))
                         for row in rows(
            "SELECT turn_id, tool_use_id, tool_name, tool_input, has_result, is_error, output,"
            " output_bytes, truncated, message_id, after_message_id"
            " FROM session_tool_results WHERE session_id = ? ORDER BY id", sid)],
        "buffer": [(*row[:-1], _events(row[-1], place)) for row in rows(
            "SELECT event_index, stream, payload, producer_seq, live_events"
            " FROM remote_runtime_outputs WHERE session_id = ? ORDER BY event_index", sid)],
        "final_events": [(index, _events(events, place)) for index, events in rows(
            "SELECT event_index, events FROM session_final_events WHERE session_id = ?", sid)],
        "permissions": rows(
            "SELECT request_id, tool_name, tool_input, event_index, requested_at, expires_at,"
            " state, message, resolved_by, resolved_at FROM session_permissions"
            " WHERE session_id = ? ORDER BY request_id", sid),
    }


def run(rows, stream, kind, made):
    """(the state before completion, after it) of a new session of `kind` that received
    the `stream` ((name, provider, lines)) as the requests `made`."""
    session_type, context = KINDS[kind]
    _, provider, lines = stream
    sid = sessions.open_session({"session_type": session_type, "context": dict(context),
                                 "provider": provider}, writing()).session_id
    _post(sid, lines, made)
    before = state(rows, sid)
    ingest.complete_session(sid, 0, writing(), clock=lambda: NOW)
    return before, state(rows, sid)


def check_same(found, expected, made):
    """The states `run` gave for the requests `made` are the `expected` ones."""
    for moment, got, want in zip(("before completion", "after completion"), found, expected):
        for name in want:
            assert got[name] == want[name], \
                f"{name} {moment}, requests {made}: {_first_difference(got[name], want[name])}"


def _count_split(provider, backend):
    """One more random split checked, in the run's figures (per provider and backend)."""
    topic = f"random splits checked [{backend}]"
    done = figures.recorded().get(topic, {}).get(provider, 0)
    figures.record(topic, **{provider: done + 1})


def _first_difference(got, want):
    """Where two states differ first, shortly: a failure names the line, not the table."""
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        for n, (one, other) in enumerate(zip(got, want)):
            if one != other:
                return f"at {n}: {_first_difference(one, other)}"
        return f"lengths {len(got)} and {len(want)}"
    return f"{got!r} instead of {want!r}"


def check_splits(rows, backend, stream, examples):
    """The stream posted whole, line by line and in `examples` random splits leaves the
    same state, for every session kind."""
    name, provider, lines = stream
    whole = [(0, len(lines))]
    expected = {kind: run(rows, stream, kind, whole) for kind in KINDS}
    assert any(after["rows"] for _, after in expected.values()), "a stream that writes nothing"
    line_by_line = [(n, n + 1) for n in range(len(lines))]
    for kind in KINDS:
        check_same(run(rows, stream, kind, line_by_line), expected[kind], line_by_line)

    @seed(zlib.crc32(name.encode()))
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(made=requests(len(lines)))
    def any_split(made):
        for kind in KINDS:
            check_same(run(rows, stream, kind, made), expected[kind], made)
        _count_split(provider, backend)

    any_split()


@pytest.mark.sqlite_only  # the splits' logic is the same on both; PostgreSQL below
@pytest.mark.parametrize("stream", STREAMS, ids=[name for name, _, _ in STREAMS])
def test_any_split_into_requests_leaves_the_same_transcript(app, rows, backend, stream):
    check_splits(rows, backend, stream, EXAMPLES)


@pytest.mark.parametrize("stream", ON_EACH_BACKEND, ids=[name for name, _, _ in ON_EACH_BACKEND])
def test_on_each_backend_a_split_leaves_the_same_transcript(app, rows, backend, stream):
    """The look-ups of stored keys are SQL of each backend: the runs printed twice and a
    Codex stream, split on PostgreSQL too (a few splits: its round trips are slower)."""
    check_splits(rows, backend, stream, max(1, EXAMPLES // 4))
