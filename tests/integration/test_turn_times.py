"""A turn's start and completion times come from the ingest clock and survive a restart."""
import json
from datetime import datetime
from datetime import timedelta
from datetime import timezone

import pytest

from app.core.clock import to_iso
from app.core.records import Chunk
from app.db import writing
from app.services import ingest
from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds):
    moment = START + timedelta(seconds=seconds)
    return lambda: moment


def post(session_id, lines, first_seq, clock):
    chunks = [Chunk(line, "stdout", first_seq + n) for n, line in enumerate(lines)]
    return ingest.ingest_output(session_id, chunks, writing(), retention_seconds=60,
                                clock=clock)


@BOTH_KINDS
def test_the_start_of_a_turn_open_across_a_restart_is_kept(kind, new_session, restart, rows,
                                                           messages):
    sid = new_session(kind)
    post(sid, [cl.assistant(cl.text("Part one."), uuid="t-1")], 0, at(1))
    [(header,)] = rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid)
    assert json.loads(header)["turn"]["started_at"] == to_iso(START + timedelta(seconds=1))

    restart()
    post(sid, [cl.assistant(cl.text("Part two."), uuid="t-2")], 1, at(5))
    post(sid, [cl.result(uuid="t-r")], 2, at(9))

    [row] = messages(sid)
    assert row["content"] == "Part one.\n\nPart two."
    assert row["metadata"]["started_at"] == to_iso(START + timedelta(seconds=1))
    assert row["metadata"]["completed_at"] == to_iso(START + timedelta(seconds=9))


@BOTH_KINDS
def test_a_turn_flushed_by_completion_after_a_restart_completes_then(kind, new_session,
                                                                     restart, messages):
    sid = new_session(kind)
    post(sid, [cl.assistant(cl.text("Unfinished."))], 0, at(2))

    restart()
    ingest.complete_session(sid, 0, writing(), clock=at(30))

    [row] = messages(sid)
    assert row["metadata"]["trigger"] == "completion"
    assert row["metadata"]["terminal_reason"] == "process_exit"
    assert (row["metadata"]["started_at"], row["metadata"]["completed_at"]) == (
        to_iso(START + timedelta(seconds=2)), to_iso(START + timedelta(seconds=30)))


def test_the_next_turn_starts_afresh(new_session, messages):
    sid = new_session("ordinary")
    post(sid, [cl.assistant(cl.text("one")), cl.result()], 0, at(1))
    post(sid, [cl.assistant(cl.text("two"))], 2, at(4))
    post(sid, [cl.result()], 3, at(6))
    first, second = messages(sid)
    assert first["metadata"]["started_at"] == first["metadata"]["completed_at"]
    assert (second["metadata"]["started_at"], second["metadata"]["completed_at"]) == (
        to_iso(START + timedelta(seconds=4)), to_iso(START + timedelta(seconds=6)))
