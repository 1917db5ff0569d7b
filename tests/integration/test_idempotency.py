"""Replaying a stream, under the same seqs or new ones, never writes a row twice."""

import pytest

from app.core.records import Chunk
from app.db import writing
from app.services.ingest import ingest_output
from app.transcript.accumulator import REPLAY_WINDOW
from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


def a_stream():
    """Two turns and a system line, with fixed uuids so a replay is the same lines."""
    return [
        cl.system_init(uuid="sys-1"),
        cl.assistant(cl.text("Looking."), cl.tool_use("toolu_1"), uuid="a-1"),
        cl.tool_result("toolu_1", uuid="u-1"),
        cl.assistant(cl.text("Found it."), uuid="a-2"),
        cl.result(uuid="r-1"),
        cl.assistant(cl.thinking(), uuid="a-3"),
        cl.result(uuid="r-2"),
    ]


@BOTH_KINDS
def test_replay_under_the_same_seqs_is_all_duplicates(kind, new_session, feed, messages, outputs,
                                                      counts, rows):
    sid = new_session(kind)
    feed(sid, a_stream())
    before = (messages(sid), outputs(sid), counts(sid))
    state = rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid)

    receipt = feed(sid, a_stream(), seq=0)

    assert (receipt.accepted, receipt.duplicates, receipt.messages_written) == (0, 7, 0)
    assert receipt.last_event_index == 6
    assert (messages(sid), outputs(sid), counts(sid)) == before
    assert rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid) == state


@pytest.mark.parametrize("kind, expected_rows", [("ordinary", 2), ("autonomous", 3)])
def test_replay_under_new_seqs_is_buffered_but_writes_no_row(kind, expected_rows, new_session,
                                                             feed, messages, outputs, counts):
    sid = new_session(kind)
    feed(sid, a_stream())
    before = messages(sid)
    assert counts(sid) == (expected_rows, expected_rows)

    receipt = feed(sid, a_stream())  # seqs 7..13

    assert (receipt.accepted, receipt.duplicates, receipt.messages_written) == (7, 0, 0)
    assert [seq for _, _, _, seq in outputs(sid)] == list(range(14))
    assert [p for _, _, p, _ in outputs(sid)[7:]] == a_stream()
    assert messages(sid) == before
    assert counts(sid) == (expected_rows, expected_rows)


@BOTH_KINDS
def test_a_line_repeated_inside_an_open_turn_counts_once(kind, new_session, feed, messages,
                                                         counts):
    sid = new_session(kind)
    line = cl.assistant(cl.text("Once."), uuid="a-dup")
    feed(sid, [line])
    feed(sid, [line])  # re-sent under a new seq while the turn is open
    feed(sid, [cl.result()])

    assert [m["content"] for m in messages(sid)] == ["Once."]
    assert counts(sid) == (1, 1)


def test_duplicate_seqs_inside_one_batch_are_dropped(app, new_session, messages, outputs):
    sid = new_session("ordinary")
    line = cl.assistant(cl.text("Only once."))
    chunks = [Chunk(line, "stdout", 0), Chunk(line, "stdout", 0), Chunk(cl.result(), "stdout", 1)]
    receipt = ingest_output(sid, chunks, writing(), retention_seconds=60)

    assert (receipt.accepted, receipt.duplicates, receipt.last_event_index) == (2, 1, 1)
    assert [(i, seq) for i, _, _, seq in outputs(sid)] == [(0, 0), (1, 1)]
    assert [m["content"] for m in messages(sid)] == ["Only once."]


def test_replay_after_completion_under_same_seqs_changes_nothing(new_session, feed, complete,
                                                                 messages, counts):
    sid = new_session("autonomous")
    feed(sid, a_stream())
    complete(sid)
    before = messages(sid)

    receipt = feed(sid, a_stream(), seq=0)

    assert receipt.accepted == 0 and receipt.duplicates == 7
    assert messages(sid) == before
    assert counts(sid) == (3, 3)


@BOTH_KINDS
def test_replay_under_new_seqs_while_a_turn_is_open_writes_no_row(kind, new_session, feed,
                                                                  complete, messages, counts):
    sid = new_session(kind)
    stream = [cl.assistant(cl.text("A1."), uuid="a-1"), cl.result(uuid="r-1"),
              cl.assistant(cl.text("A2."), uuid="a-2")]  # the second turn is still open
    feed(sid, stream)

    receipt = feed(sid, stream)  # the same lines again, under seqs 3..5

    assert receipt.messages_written == 0
    assert [m["content"] for m in messages(sid)] == ["A1."]
    complete(sid)
    assert [m["content"] for m in messages(sid)] == ["A1.", "A2."]
    assert counts(sid) == (2, 2)


@BOTH_KINDS
def test_a_replayed_fragment_of_a_flushed_turn_writes_no_row(kind, new_session, feed, messages,
                                                             counts):
    sid = new_session(kind)
    stream = [cl.assistant(cl.text("A1."), uuid="a-1"), cl.assistant(cl.text("A2."), uuid="a-2"),
              cl.result(uuid="r-1")]
    feed(sid, stream)

    receipt = feed(sid, stream[1:])  # the tail again, under new seqs

    assert (receipt.accepted, receipt.messages_written) == (2, 0)
    assert [m["content"] for m in messages(sid)] == ["A1.\n\nA2."]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_a_replayed_failed_result_writes_no_second_failure_row(kind, new_session, feed, messages,
                                                               counts):
    sid = new_session(kind)
    failed = cl.result(subtype="error_during_execution", is_error=True, uuid="r-fail")
    feed(sid, [cl.assistant(cl.text("Trying."), uuid="a-1"), failed, failed])
    feed(sid, [failed])

    assert [m["content"] for m in messages(sid)] == ["Trying."]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_a_stream_repeated_inside_one_batch_is_read_once(kind, new_session, feed, messages,
                                                         outputs, counts):
    sid = new_session(kind)
    receipt = feed(sid, a_stream() + a_stream())

    assert (receipt.accepted, receipt.duplicates) == (14, 0)
    assert len(outputs(sid)) == 14
    expected = 3 if kind == "autonomous" else 2
    assert counts(sid) == (expected, expected)
    assert len({m["turn_key"] for m in messages(sid)}) == expected


@BOTH_KINDS
def test_whole_turns_replayed_beyond_the_replay_window_write_no_row(kind, new_session, feed,
                                                                    messages, counts):
    sid = new_session(kind)
    feed(sid, a_stream())
    filler = []
    for n in range(REPLAY_WINDOW // 2 + 1):  # two ids a turn: pushes a_stream out of the window
        filler += [cl.assistant(cl.text(f"filler {n}")), cl.result()]
    feed(sid, filler)
    before = messages(sid)

    receipt = feed(sid, a_stream())

    assert receipt.messages_written == 0
    assert messages(sid) == before
    assert counts(sid) == (len(before), len(before))


@BOTH_KINDS
def test_whole_turns_replayed_after_the_buffer_expired_write_no_row(kind, new_session, feed,
                                                                    messages, counts, rows):
    sid = new_session(kind)
    feed(sid, a_stream())
    before = messages(sid)
    rows("DELETE FROM remote_runtime_outputs WHERE session_id = ?", sid)  # a retention purge

    receipt = feed(sid, a_stream())

    assert receipt.messages_written == 0
    assert messages(sid) == before
    assert counts(sid) == (len(before), len(before))
