"""A stream sent again under new seqs, on a real database: the rows and counters stay,
and a copy that ends inside the open turn is undone, its saved parts deleted."""
import json

from app.db import writing
from app.services import sessions

RUN = ['{"id": "0", "msg": {"type": "task_started", "model_context_window": 1000}}',
       '{"id": "0", "msg": {"type": "agent_reasoning", "text": "**Looking**"}}',
       '{"id": "0", "msg": {"type": "agent_message", "message": "Half way."}}']
END = ['{"id": "0", "msg": {"type": "agent_message", "message": "Done."}}',
       '{"id": "0", "msg": {"type": "task_complete", "last_agent_message": "Done."}}']


def codex_session():
    return sessions.open_session({"session_type": "workflow", "provider": "codex",
                                  "context": {"workflow_id": "wf"}}, writing()).session_id


def test_the_repository_drops_saved_parts_from_a_number_on(app, new_session, rows):
    sid = new_session()
    with writing() as uow:
        uow.turn_states.append_parts(sid, 0, [{"n": 0}, {"n": 1}, {"n": 2}])
        uow.turn_states.drop_parts_from(sid, 1)
        uow.commit()
    assert [json.loads(part) for (part,) in rows(
        "SELECT part FROM session_turn_parts WHERE session_id = ? ORDER BY part_index", sid)] == [{"n": 0}]


def test_a_copy_of_the_open_first_turn_is_undone(app, feed, rows):
    sid = codex_session()
    feed(sid, RUN)
    parts = rows("SELECT part_index, part FROM session_turn_parts WHERE session_id = ?"
                 " ORDER BY part_index", sid)
    feed(sid, RUN[:1])  # the copy in two requests: its parts are saved in between
    feed(sid, RUN[1:])
    assert rows("SELECT part_index, part FROM session_turn_parts WHERE session_id = ?"
                " ORDER BY part_index", sid) == parts
    feed(sid, END)
    [(content, blocks)] = rows("SELECT content, content_blocks FROM session_messages"
                               " WHERE session_id = ?", sid)
    assert content == "Half way.\n\nDone."
    assert [b["type"] for b in json.loads(blocks)] == ["reasoning", "text", "text"]
    feed(sid, RUN + END)  # the whole stream again: nothing new
    assert rows("SELECT message_count, conversation_turn_count FROM agent_sessions"
                " WHERE session_id = ?", sid) == [(1, 1)]
