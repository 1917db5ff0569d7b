"""Recorded provider streams, end to end: each fixture under tests/fixtures/streams/<provider>/
(`name.jsonl`) is posted to a session of that provider, the session is completed, and the
transcript must equal `name.expected.json` for each session kind.

An expected message lists its block types, and may also list its `content_blocks` in
full, its turn's `terminal_reason` and its `metadata.usage`; an expected transcript may also give the session's
turn counters and its `transcript_usage` (summed from the turns' own usage)."""
import json
from pathlib import Path

import pytest

from app.transcript.transcript_turn import BLOCK_TYPES
from app.transcript.transcript_turn import TOOL_CALL_TYPES
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"
FIXTURES = sorted(STREAMS.glob("*/*.jsonl"))
KINDS = {
    "ordinary": ("agent", {}),
    "autonomous": ("workflow", {"workflow_id": "wf-fixture"}),
}
COUNTERS = ("message_count", "conversation_turn_count", "visible_message_count")


def _id(path):
    return f"{path.parent.name}/{path.stem}"


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def _expected(path):
    return json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))


def _transcript(session, expected):
    """The session's messages in the shape of `expected` (full blocks where it has them)."""
    found = []
    for n, message in enumerate(session["messages"]):
        row = {"role": message["role"], "content": message["content"],
               "block_types": [b["type"] for b in message["content_blocks"]]}
        if n < len(expected) and "content_blocks" in expected[n]:
            row["content_blocks"] = message["content_blocks"]
        if n < len(expected) and "terminal_reason" in expected[n]:
            row["terminal_reason"] = message["metadata"].get("terminal_reason")
        if n < len(expected) and "usage" in expected[n]:
            row["usage"] = message["metadata"].get("usage")
        found.append(row)
    return found


def _check(session, expected):
    """The session's transcript and counters are the expected ones."""
    assert _transcript(session, expected["messages"]) == expected["messages"]
    assert session["message_count"] == expected["message_count"] == len(expected["messages"])
    for counter in COUNTERS:
        if counter in expected:
            assert session[counter] == expected[counter], counter
    if "transcript_usage" in expected:
        assert session["transcript_usage"] == expected["transcript_usage"]


def _post_each_with_the_one_before(client, sid, lines):
    """A runner unsure of its last request: every request re-sends the previous line."""
    for seq, line in enumerate(lines):
        first = max(seq - 1, 0)
        assert post_lines(client, sid, lines[first:seq + 1], start_seq=first).status_code == 200


def test_every_provider_has_a_fixture_with_an_expected_transcript():
    from app.providers import PROVIDERS

    assert {path.parent.name for path in FIXTURES} == set(PROVIDERS)
    for path in FIXTURES:
        assert path.with_suffix(".expected.json").is_file(), path


@pytest.mark.parametrize("batching", ["one_request", "line_by_line"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_fixture_stream_yields_the_expected_transcript(client, path, kind, batching):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = _lines(path)
    if batching == "one_request":
        assert post_lines(client, sid, lines).get_json()["accepted"] == len(lines)
    else:
        for seq, line in enumerate(lines):
            assert post_lines(client, sid, [line], start_seq=seq).status_code == 200
    assert complete(client, sid).status_code == 200

    session = get_session(client, sid)
    assert session["provider"] == path.parent.name
    _check(session, _expected(path)[kind])


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_same_seqs_posted_again_change_nothing(client, path, kind):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = _lines(path)
    _post_each_with_the_one_before(client, sid, lines)
    before = get_session(client, sid)
    again = post_lines(client, sid, lines).get_json()
    assert again["accepted"] == 0 and again["duplicates"] == len(lines)
    assert get_session(client, sid)["messages"] == before["messages"]
    complete(client, sid)
    assert post_lines(client, sid, lines).get_json()["duplicates"] == len(lines)

    _check(get_session(client, sid), _expected(path)[kind])


@pytest.mark.parametrize("batching", ["one_request", "line_by_line"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_the_stream_re_sent_under_new_seqs_adds_no_row_and_moves_no_counter(client, path, kind,
                                                                            batching):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = _lines(path)
    _post(client, sid, lines, 0, batching)
    before = _counted(get_session(client, sid))
    for again in (1, 2):  # twice: a copy that follows a copy is a copy too
        _post(client, sid, lines, again * len(lines), batching)
        assert _counted(get_session(client, sid)) == before, f"re-sent {again}"
    assert complete(client, sid).status_code == 200
    _check(get_session(client, sid), _expected(path)[kind])


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_a_runner_that_sends_its_stream_again_midway_then_goes_on(client, path, kind):
    """Restarted with its spool but not its seqs: what it sent so far comes again under
    new seqs, then the rest of the stream; the transcript is the expected one."""
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = _lines(path)
    half = len(lines) // 2
    _post(client, sid, lines[:half], 0, "line_by_line")
    _post(client, sid, lines[:half], half, "one_request")
    _post(client, sid, lines[half:], 2 * half, "line_by_line")
    assert complete(client, sid).status_code == 200
    _check(get_session(client, sid), _expected(path)[kind])


def _post(client, sid, lines, start_seq, batching):
    if batching == "one_request":
        assert post_lines(client, sid, lines, start_seq=start_seq).get_json()["accepted"] == len(lines)
        return
    for n, line in enumerate(lines):
        assert post_lines(client, sid, [line], start_seq=start_seq + n).status_code == 200


def _counted(session):
    """What a re-sent stream must leave as it was: the rows and every counter."""
    return ([(m["id"], m["content"], m["content_blocks"]) for m in session["messages"]],
            {counter: session[counter] for counter in COUNTERS}, session["transcript_usage"])


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_rows_carry_the_turn_and_its_times_in_the_normalized_vocabulary(client, path):
    sid = create_session(client, "workflow", {"workflow_id": "wf-fixture"},
                         provider=path.parent.name)
    lines = _lines(path)
    for seq, line in enumerate(lines):
        post_lines(client, sid, [line], start_seq=seq)
    complete(client, sid)

    turn_rows = [m for m in get_session(client, sid)["messages"] if "turn_id" in m["metadata"]]
    assert turn_rows
    assert len({m["metadata"]["turn_id"] for m in turn_rows}) == len(turn_rows)
    for message in turn_rows:
        meta = message["metadata"]
        assert meta["terminal_reason"] in ("success", "error", "max_turns", "interrupted",
                                           "process_exit")
        assert meta["started_at"] <= meta["completed_at"]
        assert message["timestamp"] == meta["completed_at"]
        for block in message["content_blocks"]:
            assert block["type"] in BLOCK_TYPES + TOOL_CALL_TYPES, block


def test_an_unknown_provider_is_refused_when_the_session_is_created(client):
    response = client.post("/api/remote/sessions",
                           json={"session_type": "agent", "provider": "openai"})
    assert response.status_code == 422
    assert "provider" in response.get_json()["error"]["details"]["fields"]
