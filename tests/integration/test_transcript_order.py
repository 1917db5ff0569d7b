"""Rows come back in the order they were written: ids increase, GET and pages agree."""
from app.db import reading
from app.services import sessions
from tests import claude_lines as cl


def test_rows_are_in_write_order_with_increasing_ids(new_session, feed, complete, messages,
                                                     read_session, counts):
    sid = new_session("ordinary")
    feed(sid, [cl.system_init(), cl.assistant(cl.text("One."))])
    feed(sid, [cl.result(), cl.assistant(cl.text("Two.")), cl.result()])
    feed(sid, ["runner: restarting"], stream="system")
    feed(sid, [cl.assistant(cl.text("Three."))])
    complete(sid)

    stored = messages(sid)
    assert [m["content"] for m in stored] == [
        "Session started: model=claude-sonnet-4-5, cwd=/repo, tools=2, mcp_servers=0",
        "One.", "Two.", "runner: restarting", "Three."]
    ids = [m["id"] for m in stored]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [(m.id, m.content) for m in read_session(sid).messages] == [
        (m["id"], m["content"]) for m in stored]
    assert counts(sid) == (5, 5)


def test_pages_follow_insert_order(app, new_session, feed, messages):
    sid = new_session("autonomous")
    for n in range(5):
        feed(sid, [cl.assistant(cl.text(f"Turn {n}.")), cl.result()])

    seen, cursor = [], None
    while True:
        page = sessions.list_messages(sid, reading(), after=cursor, limit=2)
        seen.extend(m.id for m in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor

    assert seen == [m["id"] for m in messages(sid)]
    assert [m["content"] for m in messages(sid)] == [f"Turn {n}." for n in range(5)]


def test_sessions_do_not_see_each_others_rows(new_session, feed, messages, read_session, counts):
    first, second = new_session("ordinary"), new_session("autonomous")
    feed(first, [cl.assistant(cl.text("Mine.")), cl.result()])
    feed(second, [cl.assistant(cl.text("Yours.")), cl.result()])

    assert [m.content for m in read_session(first).messages] == ["Mine."]
    assert [m["content"] for m in messages(second)] == ["Yours."]
    assert counts(first) == counts(second) == (1, 1)
