"""Usage reports move the counters once each; transcript lines never do."""
import pytest

from app.core.errors import SessionNotFound
from app.db import writing
from app.services.ingest import record_usage
from tests import claude_lines as cl

REPORT = {"report_id": "r1", "input_tokens": 10, "output_tokens": 5, "requests": 1}
ZERO = {"request_count": 0, "total_tokens": 0, "total_input_tokens": 0, "total_output_tokens": 0}


def usage_of(row):
    return {key: row[key] for key in ZERO}


def test_a_repeated_report_is_counted_once(app, new_session, session_row, rows):
    sid = new_session("ordinary")
    first, _ = record_usage(sid, dict(REPORT), writing())
    again, session = record_usage(sid, dict(REPORT), writing())

    assert (first, again) == (True, False)
    expected = {"request_count": 1, "total_tokens": 15, "total_input_tokens": 10,
                "total_output_tokens": 5}
    assert usage_of(session_row(sid)) == expected
    assert session.total_tokens == 15
    assert rows("SELECT report_id, input_tokens FROM usage_report_receipts"
                " WHERE session_id = ?", sid) == [("r1", 10)]


def test_distinct_reports_add_up(app, new_session, session_row):
    sid = new_session("autonomous")
    record_usage(sid, dict(REPORT), writing())
    record_usage(sid, {"report_id": "r2", "input_tokens": 1, "output_tokens": 2, "requests": 3},
                 writing())

    assert usage_of(session_row(sid)) == {"request_count": 4, "total_tokens": 18,
                                          "total_input_tokens": 11, "total_output_tokens": 7}


def test_same_report_id_in_another_session_is_counted_there(app, new_session, session_row):
    first, second = new_session("ordinary"), new_session("ordinary")
    record_usage(first, dict(REPORT), writing())
    counted, _ = record_usage(second, dict(REPORT), writing())

    assert counted is True
    assert session_row(second)["total_tokens"] == 15


@pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
def test_transcript_ingestion_never_touches_usage(kind, app, new_session, feed, complete,
                                                  session_row):
    sid = new_session(kind)
    feed(sid, [cl.system_init(), cl.assistant(cl.text("Hi."), cl.tool_use()), cl.tool_result(),
               cl.result()])
    assert usage_of(session_row(sid)) == ZERO

    record_usage(sid, dict(REPORT), writing())
    feed(sid, [cl.assistant(cl.text("More.")), cl.result()])
    complete(sid)

    assert usage_of(session_row(sid))["total_tokens"] == 15
    assert usage_of(session_row(sid))["request_count"] == 1


def test_usage_never_touches_message_count(app, new_session, feed, counts):
    sid = new_session("ordinary")
    feed(sid, [cl.assistant(cl.text("Hi.")), cl.result()])
    record_usage(sid, dict(REPORT), writing())

    assert counts(sid) == (1, 1)


def test_usage_for_an_unknown_session_is_not_found(app, rows):
    with pytest.raises(SessionNotFound):
        record_usage("no-such-session", dict(REPORT), writing())
    assert rows("SELECT COUNT(*) FROM usage_report_receipts") == [(0,)]
