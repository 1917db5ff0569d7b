"""The session list's opening rows: per session, its init note and first text, one query."""
from app.db import reading
from app.services import sessions
from app.storage.repositories.messages import OPENER_CHARS
from tests import claude_lines as cl


def listed(limit=50):
    return {s.session_id: s for s in sessions.list_sessions(reading(), limit=limit,
                                                            with_openers=True).items}


def test_each_session_gets_its_first_init_note_and_first_text(new_session, feed, rows):
    talker, quiet, silent = new_session("autonomous"), new_session(), new_session()
    long_text = "First words. " + "x" * (OPENER_CHARS * 3)
    feed(talker, [cl.system_init(), cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"),
                  cl.result(),  # an evidence row (content "") comes first: skipped
                  cl.assistant(cl.text(long_text)), cl.result(),
                  cl.system_init(), cl.assistant(cl.text("Later words.")), cl.result()])
    feed(quiet, [cl.system_init()])

    found = listed()
    opening = found[talker].messages
    assert [(m.role, m.content[:16]) for m in opening] == [
        ("system", "Session started:"), ("assistant", "First words. xxx")]
    assert len(opening[1].content) == OPENER_CHARS  # never the whole row
    first_ids = rows("SELECT MIN(id) FROM session_messages WHERE session_id = ? AND role = ?"
                     " UNION ALL SELECT MIN(id) FROM session_messages WHERE session_id = ?"
                     " AND role = 'assistant' AND content <> ''", talker, "system", talker)
    assert [m.id for m in opening] == [r[0] for r in first_ids]
    assert [m.role for m in found[quiet].messages] == ["system"]
    assert found[silent].messages == []


def test_a_plain_list_reads_no_messages(new_session, feed):
    sid = new_session()
    feed(sid, [cl.system_init(), cl.assistant(cl.text("hi")), cl.result()])
    [session] = sessions.list_sessions(reading(), limit=5).items
    assert session.session_id == sid and session.messages == []
