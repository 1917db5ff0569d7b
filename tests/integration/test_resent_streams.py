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


CODEX_RUN = [
    '{"type": "thread.started", "thread_id": "th-1"}',
    '{"type": "turn.started"}',
    '{"type": "item.started", "item": {"id": "item_0", "type": "command_execution",'
    ' "command": "ls", "aggregated_output": "", "exit_code": null, "status": "in_progress"}}',
    '{"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",'
    ' "command": "ls", "aggregated_output": "a\\n", "exit_code": 0, "status": "completed"}}',
    '{"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "Listed."}}',
    '{"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}}',
]


def test_codex_item_lines_a_runner_sends_again_under_new_seqs_are_known_by_their_item(
        app, feed, rows):
    """A runner that lost its acknowledgements sends its last lines again under new
    seqs: a Codex item state is named by its provider turn, item id and text, so the
    copy adds nothing, while the next run's items (ids start again) are new."""
    sid = codex_session()
    feed(sid, CODEX_RUN)
    counters = rows("SELECT message_count, conversation_turn_count, transcript_output_tokens"
                    " FROM agent_sessions WHERE session_id = ?", sid)
    for tail in (1, 2, 3):
        feed(sid, CODEX_RUN[-tail:])
    assert rows("SELECT message_count, conversation_turn_count, transcript_output_tokens"
                " FROM agent_sessions WHERE session_id = ?", sid) == counters
    # the next run of the thread: the same item ids, new items (a run that repeats the
    # session's beginning line for line would be taken for a copy: replay.py)
    feed(sid, [line.replace("Listed.", "Listed again.") for line in CODEX_RUN[1:]])
    assert rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?", sid) == [(3,)]
    assert rows("SELECT conversation_turn_count FROM agent_sessions WHERE session_id = ?",
                sid) == [(counters[0][1] + 1,)]
