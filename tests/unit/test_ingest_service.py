"""The ingest use cases against in-memory fakes: the orchestration, not the SQL."""
import json
from datetime import datetime
from datetime import timedelta
from datetime import timezone

import pytest

from app.core.clock import to_iso
from app.core.errors import SessionClosed
from app.core.errors import SessionNotFound
from app.core.errors import UnknownProvider
from app.core.records import Chunk
from app.services import ingest
from tests import claude_lines as cl
from tests.fakes import FakeUnitOfWork


@pytest.fixture
def uow():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", "t0")
    uow.sessions.add("wf", None, "workflow", {"workflow_id": "wf-1"}, "claude", "t0")
    return uow


def send(uow, lines, session_id="s1", start=0):
    chunks = [Chunk(line, "stdout", start + i) for i, line in enumerate(lines)]
    return ingest.ingest_output(session_id, chunks, uow, retention_seconds=60)


def test_new_lines_are_numbered_from_the_session_counter(uow):
    send(uow, ["a", "b"])
    receipt = send(uow, ["c"], start=2)
    assert receipt.last_event_index == 2
    assert [o.event_index for _, o in uow.outputs.rows] == [0, 1, 2]
    assert uow.commits == 2


def test_result_then_completion_writes_one_row_and_counts_it_once(uow):
    send(uow, [cl.assistant(cl.text("hi")), cl.result()])
    ingest.complete_session("s1", 0, uow)
    assert [m.content for m in uow.messages.rows] == ["hi"]
    assert uow.sessions.rows["s1"].message_count == 1
    assert uow.sessions.rows["s1"].status == "completed"


def test_replayed_lines_under_new_seqs_write_nothing(uow):
    lines = [cl.assistant(cl.text("hi")), cl.result()]
    send(uow, lines)
    receipt = send(uow, lines, start=10)
    assert receipt.accepted == 2 and receipt.messages_written == 0
    assert uow.sessions.rows["s1"].message_count == 1


def test_replayed_tail_does_not_leak_into_the_next_turn(uow):
    first = [cl.assistant(cl.text("one")), cl.assistant(cl.text("two")), cl.result()]
    send(uow, first)
    send(uow, first[1:2] + [cl.assistant(cl.text("three")), cl.result()], start=3)
    assert [m.content for m in uow.messages.rows] == ["one\n\ntwo", "three"]


def test_open_turn_is_kept_between_requests(uow):
    send(uow, [cl.assistant(cl.text("part one"), message_id="m")])
    assert uow.turn_states.parts["s1"] == [{"type": "text", "text": "part one"}]
    send(uow, [cl.assistant(cl.text("part two"), message_id="m"), cl.result()], start=1)
    assert [m.content for m in uow.messages.rows] == ["part one\n\npart two"]
    assert "s1" not in uow.turn_states.parts  # released once the turn is written


def test_autonomous_session_keeps_tool_only_turns(uow):
    send(uow, [cl.assistant(cl.tool_use("t")), cl.tool_result("t"), cl.result()], "wf")
    [row] = uow.messages.rows
    assert row.content == "" and [b["type"] for b in row.content_blocks] == ["tool_use", "tool_result"]


def test_failed_exit_marks_the_session_failed_and_flushes(uow):
    send(uow, [cl.assistant(cl.text("partial"))])
    session = ingest.complete_session("s1", 2, uow)
    assert (session.status, session.exit_code, session.message_count) == ("failed", 2, 1)
    assert uow.messages.rows[0].metadata["trigger"] == "completion"


def test_completed_session_refuses_new_output_but_answers_retries(uow):
    send(uow, ["a"])
    ingest.complete_session("s1", 0, uow)
    assert send(uow, ["a"]).duplicates == 1
    with pytest.raises(SessionClosed):
        send(uow, ["b"], start=1)


def test_unknown_session_is_reported(uow):
    with pytest.raises(SessionNotFound):
        send(uow, ["a"], session_id="missing")


def test_usage_counts_once_per_report(uow):
    report = {"report_id": "r", "input_tokens": 5, "output_tokens": 1, "requests": 1}
    assert ingest.record_usage("s1", report, uow)[0] is True
    counted, session = ingest.record_usage("s1", report, uow)
    assert counted is False
    assert (session.request_count, session.total_tokens) == (1, 6)


def test_lines_are_read_by_the_parser_of_the_sessions_provider(uow):
    uow.sessions.add("gm", None, "agent", {}, "gemini", "t0")
    deltas = ['{"type": "message", "role": "assistant", "content": "Hel", "delta": true}',
              '{"type": "message", "role": "assistant", "content": "lo", "delta": true}',
              '{"type": "result", "status": "success"}']
    send(uow, deltas, session_id="gm")
    send(uow, deltas)  # the Claude parser reads them as OpenAI-shape messages: no deltas
    assert [(m.session_id, m.content) for m in uow.messages.rows] == [
        ("gm", "Hello"), ("s1", "Hel\n\nlo")]


def test_a_session_of_an_unknown_provider_stores_nothing(uow):
    uow.sessions.add("old", None, "agent", {}, "no-such-cli", "t0")
    with pytest.raises(UnknownProvider):
        send(uow, [cl.assistant(cl.text("hi")), cl.result()], session_id="old")
    assert uow.outputs.rows == [] and uow.commits == 0


def counters(uow, session_id="s1"):
    row = uow.sessions.rows[session_id]
    return row.conversation_turn_count, row.visible_message_count, row.message_count


def test_result_then_completion_counts_one_turn_and_one_visible_message(uow):
    send(uow, [cl.assistant(cl.text("hi")), cl.result()])
    ingest.complete_session("s1", 0, uow)
    assert counters(uow) == (1, 1, 1)


def test_a_replayed_turn_moves_no_counter(uow):
    lines = [cl.assistant(cl.text("hi")), cl.result(),
             cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()]
    send(uow, lines)
    send(uow, lines, start=10)
    assert counters(uow) == (2, 1, 1)


def test_a_tool_only_ordinary_turn_counts_as_a_turn_without_a_visible_message(uow):
    send(uow, [cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()])
    assert counters(uow) == (1, 0, 0)


def test_a_tool_only_autonomous_turn_writes_a_row_that_is_not_visible(uow):
    send(uow, [cl.assistant(cl.tool_use("t1")), cl.result()], session_id="wf")
    assert counters(uow, "wf") == (1, 0, 1)


def test_two_identical_turns_are_two_turns_and_two_visible_messages(uow):
    send(uow, [cl.assistant(cl.text("same")), cl.result(),
               cl.assistant(cl.text("same")), cl.result()])
    assert counters(uow) == (2, 2, 2)


def test_whitespace_text_and_system_rows_are_not_visible_messages(uow):
    send(uow, [cl.system_init(), cl.assistant(cl.text("  \n")), cl.result(),
               cl.assistant(cl.thinking()), cl.result(is_error=True, subtype="error_max_turns")])
    assert [m.role for m in uow.messages.rows] == ["system", "system"]
    assert counters(uow) == (2, 0, 2)


def test_a_turn_closed_by_completion_counts_once(uow):
    send(uow, [cl.assistant(cl.text("unfinished"))])
    ingest.complete_session("s1", 0, uow)
    ingest.complete_session("s1", 0, uow)
    assert counters(uow) == (1, 1, 1)


class StepClock:
    """A clock that moves one second per reading, from a fixed start."""

    def __init__(self):
        self.now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)

    def __call__(self):
        self.now += timedelta(seconds=1)
        return self.now


def test_a_row_says_when_its_turn_started_and_when_it_completed(uow):
    clock = StepClock()
    chunks = [Chunk(cl.assistant(cl.text("a")), "stdout", 0)]
    ingest.ingest_output("s1", chunks, uow, retention_seconds=60, clock=clock)
    first = to_iso(clock.now)
    chunks = [Chunk(cl.assistant(cl.text("b")), "stdout", 1), Chunk(cl.result(), "stdout", 2)]
    ingest.ingest_output("s1", chunks, uow, retention_seconds=60, clock=clock)
    [row] = uow.messages.rows
    assert (row.metadata["started_at"], row.metadata["completed_at"]) == (first, to_iso(clock.now))
    assert first < row.metadata["completed_at"]


def test_a_turn_closed_by_completion_completes_at_the_completion(uow):
    clock = StepClock()
    ingest.ingest_output("s1", [Chunk(cl.assistant(cl.text("a")), "stdout", 0)], uow,
                         retention_seconds=60, clock=clock)
    first = to_iso(clock.now)
    ingest.complete_session("s1", 0, uow, clock=clock)
    [row] = uow.messages.rows
    assert (row.metadata["started_at"], row.metadata["completed_at"]) == (first, to_iso(clock.now))


def _codex_session(uow, sid="cx"):
    uow.sessions.add(sid, None, "agent", {}, "codex", "t0")
    return sid


def _rows_and_usage(uow, sid):
    row = uow.sessions.rows[sid]
    return ([(m.role, m.content) for m in uow.messages.rows if m.session_id == sid],
            row.message_count, row.conversation_turn_count,
            row.transcript_output_tokens)


def _twice(run):
    """A Codex thread's run printed twice alike: the second run repeats the session's
    first id-less line, so it is taken for a copy (docs/transcript-contract.md)."""
    return run + run[1:]


def test_a_copy_of_a_run_in_the_same_request_writes_what_a_copy_in_another_does(uow):
    from tests import codex_lines as cx
    run = [cx.thread_started(), cx.turn_started(),
           json.dumps({"type": "error", "message": "usage limit"}),
           json.dumps({"type": "turn.failed", "error": {"message": "usage limit"}})]
    lines = _twice(run)
    apart, together = _codex_session(uow, "apart"), _codex_session(uow, "together")
    for seq, line in enumerate(lines):
        send(uow, [line], session_id=apart, start=seq)
    send(uow, lines, session_id=together)

    found = _rows_and_usage(uow, together)
    assert found == _rows_and_usage(uow, apart)
    rows = found[0]
    assert [role for role, _ in rows] == ["system", "system", "system"]  # the first run's
    assert found[1] == 3


def test_a_turn_and_its_copy_in_one_request_add_the_turns_usage_once(uow):
    from tests import codex_lines as cx
    lines = _twice([cx.thread_started(), cx.turn_started(), cx.message("item_0", "Done."),
                    cx.turn_completed(input_tokens=100, output_tokens=7)])
    sid = _codex_session(uow)
    send(uow, lines, session_id=sid)

    rows, messages, turns, output = _rows_and_usage(uow, sid)
    assert [content for _, content in rows][-1] == "Done."
    assert (messages, turns, output) == (2, 1, 7)
    # the copy's turn.completed names no row, as it would in a request of its own
    events = [event.split(" ", 1) for (s, _), text in sorted(uow.outputs.live.items())
              if s == sid for event in text.split("\n")]
    named = [json.loads(data)["message_id"] for name, data in events if name == "turn.completed"]
    assert named[0] is not None and named[1:] == [None]


def test_a_turn_end_sent_again_alone_under_a_new_seq_writes_nothing(uow):
    from tests import codex_lines as cx
    failed = json.dumps({"type": "turn.failed", "error": {"message": "usage limit"}})
    sid = _codex_session(uow)
    send(uow, [cx.thread_started(), cx.turn_started(),
               json.dumps({"type": "error", "message": "usage limit"}), failed], session_id=sid)
    before = _rows_and_usage(uow, sid)
    assert [content for _, content in before[0]][-1] == "Turn failed (error): usage limit"

    receipt = send(uow, [failed], session_id=sid, start=4)  # the runner retrying its last line

    assert receipt.accepted == 1 and receipt.messages_written == 0
    assert _rows_and_usage(uow, sid) == before


def test_the_same_turn_end_after_a_turn_started_closes_a_turn_of_its_own(uow):
    from tests import codex_lines as cx
    failed = json.dumps({"type": "turn.failed", "error": {"message": "usage limit"}})
    sid = _codex_session(uow)
    send(uow, [cx.thread_started(), cx.turn_started(),
               json.dumps({"type": "error", "message": "usage limit"}), failed], session_id=sid)
    rows_before = _rows_and_usage(uow, sid)[0]

    send(uow, [cx.turn_started(), failed], session_id=sid, start=4)  # a run that failed at once

    rows, messages, turns, _ = _rows_and_usage(uow, sid)
    assert rows == [*rows_before, ("system", "Turn failed (error): usage limit")]
    assert (messages, turns) == (len(rows), 2)


def test_a_result_that_closes_an_empty_turn_but_reports_tokens_counts_them_once(uow):
    said = [cl.assistant(cl.text("Done."), uuid="a-1"), cl.result(uuid="r-1")]
    # a background task's follow-up: its own result line, with nothing new to show
    follow_up = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                            "uuid": "r-2", "usage": {"input_tokens": 480, "output_tokens": 8}})
    send(uow, said + [follow_up])
    send(uow, [follow_up], start=3)  # sent again under a new seq: known by its uuid

    row = uow.sessions.rows["s1"]
    assert [m.content for m in uow.messages.rows] == ["Done."]
    assert row.conversation_turn_count == 2 and row.message_count == 1
    assert row.transcript_output_tokens == 8 + json.loads(cl.result())["usage"]["output_tokens"]
