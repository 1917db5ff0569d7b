"""Process completion flushes the open turn once and closes the session to new output."""
import pytest

from app.core.errors import SessionClosed
from app.core.errors import SessionNotFound
from app.core.records import Chunk
from app.db import writing
from app.services import ingest
from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


@BOTH_KINDS
def test_result_then_complete_flushes_once(kind, new_session, feed, complete, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("All done.")), cl.result()])
    session = complete(sid)

    [row] = messages(sid)
    assert (row["content"], row["metadata"]["trigger"]) == ("All done.", "result")
    assert session.message_count == 1
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_complete_without_result_flushes_the_open_turn(kind, new_session, feed, complete,
                                                       messages, counts, session_row):
    sid = new_session(kind)
    use = cl.tool_use("toolu_5")
    feed(sid, [cl.assistant(cl.text("Half a thought"), use)])
    assert messages(sid) == []

    complete(sid)

    [row] = messages(sid)
    assert (row["role"], row["content"]) == ("assistant", "Half a thought")
    assert row["content_blocks"] == [cl.text("Half a thought"), use]
    assert row["metadata"]["trigger"] == "completion"
    assert "result" not in row["metadata"]
    assert counts(sid) == (1, 1)
    assert session_row(sid)["status"] == "completed"


@BOTH_KINDS
def test_completing_twice_writes_nothing_more(kind, new_session, feed, complete, messages,
                                              counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Open turn."))])
    complete(sid)
    again = complete(sid)

    assert [m["content"] for m in messages(sid)] == ["Open turn."]
    assert again.message_count == 1
    assert counts(sid) == (1, 1)


def test_a_second_completion_does_not_rewrite_the_first(new_session, complete, rows):
    sid = new_session("ordinary")
    complete(sid, exit_code=3)
    before = rows("SELECT status, exit_code, updated_at FROM agent_sessions"
                  " WHERE session_id = ?", sid)

    again = complete(sid, exit_code=0)

    assert (again.status, again.exit_code) == ("failed", 3)
    assert rows("SELECT status, exit_code, updated_at FROM agent_sessions"
                " WHERE session_id = ?", sid) == before


def test_nonzero_exit_code_marks_failed_and_still_flushes(new_session, feed, complete,
                                                          messages, session_row):
    sid = new_session("ordinary")
    feed(sid, [cl.assistant(cl.text("Crashing soon."))])
    complete(sid, exit_code=2)

    assert [m["content"] for m in messages(sid)] == ["Crashing soon."]
    assert (session_row(sid)["status"], session_row(sid)["exit_code"]) == ("failed", 2)


@BOTH_KINDS
def test_failed_result_without_text_is_a_system_row(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.result(subtype="error_during_execution", is_error=True,
                         text_result="API overloaded")])

    [row] = messages(sid)
    assert row["role"] == "system"
    assert row["content"].startswith("Turn failed")
    assert row["content"] == "Turn failed (error_during_execution): API overloaded"
    assert row["metadata"]["result"]["is_error"] is True
    assert counts(sid) == (1, 1)


@pytest.mark.parametrize("kind, expected", [
    ("ordinary", [("system", "Turn failed (error_max_turns)", [])]),
    ("autonomous", [("assistant", "", [cl.tool_use()])]),
])
def test_failed_tool_only_turn(kind, expected, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.tool_use()), cl.result(subtype="error_max_turns", is_error=True)])

    assert [(m["role"], m["content"], m["content_blocks"]) for m in messages(sid)] == expected
    assert messages(sid)[0]["metadata"]["result"]["subtype"] == "error_max_turns"
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_failed_result_after_text_keeps_the_text_row(kind, new_session, feed, messages):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Trying.")), cl.result(subtype="error_during_execution",
                                                          is_error=True)])

    [row] = messages(sid)
    assert (row["role"], row["content"]) == ("assistant", "Trying.")
    assert row["metadata"]["result"]["subtype"] == "error_during_execution"


@BOTH_KINDS
def test_output_after_completion_is_refused_and_not_stored(kind, new_session, feed, complete,
                                                           outputs, session_row, messages):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Bye.")), cl.result()])
    complete(sid)

    with pytest.raises(SessionClosed):
        feed(sid, [cl.assistant(cl.text("Too late."))])

    assert len(outputs(sid)) == 2
    assert session_row(sid)["next_event_index"] == 2
    assert [m["content"] for m in messages(sid)] == ["Bye."]


def test_duplicates_after_completion_still_get_a_receipt(new_session, feed, complete, outputs):
    sid = new_session("ordinary")
    lines = [cl.assistant(cl.text("Bye.")), cl.result()]
    feed(sid, lines)
    complete(sid)

    receipt = feed(sid, lines, seq=0)

    assert (receipt.accepted, receipt.duplicates, receipt.last_event_index) == (0, 2, 1)
    assert len(outputs(sid)) == 2


def test_duplicates_mixed_with_new_output_after_completion_are_refused(new_session, feed,
                                                                       complete, outputs):
    sid = new_session("ordinary")
    bye = cl.assistant(cl.text("Bye."))
    feed(sid, [bye])
    complete(sid)

    with pytest.raises(SessionClosed):
        feed(sid, [bye, cl.result()], seq=0)
    assert len(outputs(sid)) == 1


def test_unknown_session_is_not_found_and_nothing_is_stored(app, rows):
    with pytest.raises(SessionNotFound):
        ingest.ingest_output("no-such-session", [Chunk("x", "stdout", 0)], writing(),
                             retention_seconds=60)
    with pytest.raises(SessionNotFound):
        ingest.complete_session("no-such-session", 0, writing())

    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(0,)]
    assert rows("SELECT COUNT(*) FROM session_turn_parts") == [(0,)]
