"""remote_runtime_outputs keeps every raw line, numbered gap-free; junk never touches a turn."""
import json
from datetime import datetime

import pytest

from app.core.records import Chunk
from app.db import writing
from app.services.ingest import ingest_output
from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
JUNK = [
    "not json at all",
    "{\"type\": \"assistant\", \"message\": ",  # truncated JSON
    json.dumps({"type": "progress", "percent": 40}),
    json.dumps(["a", "list"]),
    json.dumps({"type": "user", "message": {"role": "user", "content": "a prompt echo"}}),
]


@BOTH_KINDS
def test_junk_lines_are_stored_and_leave_the_open_turn_alone(kind, new_session, feed, rows,
                                                             outputs, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Working."), uuid="a-1")])
    state = rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid)

    receipt = feed(sid, JUNK)

    assert receipt.accepted == len(JUNK) and receipt.messages_written == 0
    assert [payload for _, _, payload, _ in outputs(sid)][1:] == JUNK
    assert rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid) == state
    assert messages(sid) == []

    feed(sid, [cl.assistant(cl.text("Still working."), uuid="a-2"), cl.result()])

    [row] = messages(sid)
    assert row["content"] == "Working.\n\nStill working."
    assert row["metadata"]["event_range"] == [0, 7]
    assert counts(sid) == (1, 1)


def test_junk_between_turns_writes_nothing_on_completion(new_session, feed, complete, messages,
                                                         counts):
    sid = new_session("autonomous")
    feed(sid, [cl.assistant(cl.text("Done.")), cl.result()] + JUNK)
    complete(sid)

    assert [m["content"] for m in messages(sid)] == ["Done."]
    assert counts(sid) == (1, 1)


def test_event_index_is_gap_free_across_requests_with_duplicates(new_session, feed, outputs,
                                                                 session_row):
    sid = new_session("ordinary")
    line = cl.assistant(cl.text("a"))
    receipts = [
        feed(sid, [cl.system_init(), line]),                           # seqs 0, 1
        feed(sid, [line], seq=1),                                      # duplicate of 1
        feed(sid, ["stderr noise"], stream="stderr"),                  # seq 2
        ingest_output(sid, [Chunk(line, "stdout", 1), Chunk("stderr noise", "stderr", 2),
                            Chunk(cl.result(), "stdout", 3)],
                      writing(), retention_seconds=60),                # 1, 2 dup; 3 new
        feed(sid, ["note"], stream="system", seq=4),                   # seq 4
    ]

    assert [(r.accepted, r.duplicates, r.last_event_index) for r in receipts] == [
        (2, 0, 1), (0, 1, 1), (1, 0, 2), (1, 2, 3), (1, 0, 4)]
    indexes = [index for index, _, _, _ in outputs(sid)]
    assert indexes == list(range(5))
    assert session_row(sid)["next_event_index"] == 5


def test_chunks_without_seq_are_always_new(app, new_session, outputs):
    sid = new_session("ordinary")
    for _ in range(2):
        ingest_output(sid, [Chunk("same line"), Chunk("same line")], writing(),
                      retention_seconds=60)

    assert [(index, seq) for index, _, _, seq in outputs(sid)] == [
        (0, None), (1, None), (2, None), (3, None)]


def test_event_index_is_per_session(new_session, feed, outputs):
    first, second = new_session("ordinary"), new_session("autonomous")
    feed(first, ["x", "y"])
    feed(second, ["z"])
    feed(first, ["w"])

    assert [i for i, _, _, _ in outputs(first)] == [0, 1, 2]
    assert [i for i, _, _, _ in outputs(second)] == [0]


def test_rows_expire_after_the_retention_period(new_session, feed, rows):
    sid = new_session("ordinary")
    feed(sid, ["x"])

    [(created, expires)] = rows("SELECT created_at, expires_at FROM remote_runtime_outputs"
                                " WHERE session_id = ?", sid)
    gap = datetime.fromisoformat(expires) - datetime.fromisoformat(created)
    assert gap.total_seconds() == 3600


def test_the_largest_batch_is_one_request(new_session, feed, outputs, counts):
    sid = new_session("ordinary")
    lines = []
    for n in range(5_000):  # 10,000 chunks, the most one request may carry
        lines += [cl.assistant(cl.text(f"Turn {n}.")), cl.result()]
    receipt = feed(sid, lines)
    again = feed(sid, lines, seq=0)

    assert (receipt.accepted, receipt.last_event_index) == (10_000, 9_999)
    assert (again.accepted, again.duplicates) == (0, 10_000)
    assert len(outputs(sid)) == 10_000
    assert counts(sid) == (5_000, 5_000)


def test_each_row_stores_the_json_its_output_event_sends(new_session, feed, rows):
    sid = new_session()
    lines = ['{"type": "assistant", "text": "say \\"hi\\""}', "tab\there \u00e9 \u2028 \x07",
             "\U0001f600", ""]
    feed(sid, lines)
    feed(sid, ["stderr line"], stream="stderr")
    stored = rows("SELECT event_index, stream, payload, created_at, event_json"
                  " FROM remote_runtime_outputs WHERE session_id = ? ORDER BY event_index", sid)
    assert len(stored) == 5
    for index, stream, payload, created_at, event_json in stored:
        event = {"event_index": index, "stream": stream, "payload": payload,
                 "created_at": created_at}
        assert json.loads(event_json) == event
        assert "\n" not in event_json and "\r" not in event_json  # one SSE data line
        if payload.isascii():
            assert event_json == json.dumps(event, separators=(",", ":"))
