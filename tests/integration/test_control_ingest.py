"""What ingest derives from the control channel's lines, on a real database (SQLite and
PostgreSQL), read back with SQL: prompt echoes as user rows counted once, the inputs
they name applied, permission requests recorded and withdrawn, interrupted turns
marked. The Claude lines are a real capture (tests/fixtures/interactive)."""
import json
from pathlib import Path

from app.core.inputs import input_uuid
from app.db import writing
from app.services import inputs

INTERACTIVE = Path(__file__).resolve().parents[1] / "fixtures" / "interactive"


def capture(name):
    return (INTERACTIVE / f"{name}.jsonl").read_text().splitlines()


def queue(sid, content, client_id):
    return inputs.send_input(sid, content, client_id, writing(), max_bytes=100 * 1024).input


def echo(uuid, content):
    return json.dumps({"type": "user", "message": {"role": "user", "content": content},
                       "uuid": uuid, "isReplay": True})


def counters(rows, sid):
    return rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", sid)[0][0]


def test_each_echo_is_one_user_row_counted_once_for_each_kind(new_session, feed, rows,
                                                             messages):
    for kind in ("ordinary", "autonomous"):
        sid = new_session(kind)
        lines = capture("claude_permissions")
        feed(sid, lines)
        feed(sid, lines)  # the stream again, under new seqs
        feed(sid, lines[:12], seq=0)  # and a re-sent batch, same seqs
        users = rows("SELECT content, source, turn_key FROM session_messages"
                     " WHERE session_id = ? AND role = 'user' ORDER BY id", sid)
        assert [u[0] for u in users] == ["say hello", "TOOL please", "SLOW reply",
                                         "TOOL again", "say bye"], kind
        assert {u[1] for u in users} == {"remote_live"}
        assert users[0][2] == "user:11111111-1111-4111-8111-111111111111"
        total = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?", sid)[0][0]
        assert counters(rows, sid) == total, kind
        order = [m["role"] for m in messages(sid) if m["role"] != "system"]
        assert order[:4] == ["user", "assistant", "user", "assistant"], kind


def test_an_echo_applies_the_input_it_names(new_session, feed, rows):
    sid = new_session()
    first = queue(sid, "one", "c-1")
    second = queue(sid, "two", "c-2")
    feed(sid, [echo(input_uuid(sid, first.input_id), "one"),
               echo("not-an-input", "the runner's own prompt")])
    found = rows("SELECT client_message_id, state, applied_at IS NOT NULL FROM session_inputs"
                 " WHERE session_id = ? ORDER BY input_id", sid)
    assert found == [("c-1", "applied", True), ("c-2", "queued", False)]
    applied_at = rows("SELECT applied_at FROM session_inputs WHERE input_id = ?",
                      first.input_id)
    feed(sid, [echo(input_uuid(sid, first.input_id), "one"),  # again: nothing changes
               echo(input_uuid(sid, second.input_id), "two")])
    assert rows("SELECT applied_at FROM session_inputs WHERE input_id = ?",
                first.input_id) == applied_at
    assert rows("SELECT state FROM session_inputs WHERE input_id = ?",
                second.input_id) == [("applied",)]
    assert rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ? AND role = 'user'",
                sid) == [(3,)]


def test_permissions_are_recorded_and_a_withdrawn_one_cancelled(new_session, feed, rows):
    sid = new_session()
    lines = capture("claude_permissions")
    feed(sid, lines)
    found = rows("SELECT tool_name, tool_input, state, resolved_by, event_index,"
                 " expires_at > requested_at FROM session_permissions WHERE session_id = ?"
                 " ORDER BY event_index", sid)
    assert [(f[0], json.loads(f[1]), f[2], f[3]) for f in found] == [
        ("Bash", {"command": "touch made.txt", "description": "make a file"}, "pending", None),
        ("Bash", {"command": "touch made.txt", "description": "make a file"}, "cancelled",
         "agent"),
    ]
    assert all(f[5] for f in found)
    assert json.loads(lines[found[0][4]])["type"] == "control_request"
    feed(sid, lines)  # re-sent: no second row, no change
    assert rows("SELECT COUNT(*) FROM session_permissions WHERE session_id = ?", sid) == [(2,)]


def test_an_interrupted_turn_is_marked_in_its_row(new_session, feed, messages):
    sid = new_session()
    feed(sid, capture("claude_interrupt"))
    assistant = [m for m in messages(sid) if m["role"] == "assistant"]
    assert assistant[0]["metadata"]["interrupted"] is True
    assert assistant[0]["metadata"]["terminal_reason"] == "interrupted"
    assert "interrupted" not in assistant[1]["metadata"]


def test_an_interactive_claude_session_says_it_started_once(new_session, feed, rows):
    """Claude prints its init at every turn of an interactive session (5 in this capture)
    and again when resumed: one "Session started" note, however often it comes."""
    lines = capture("claude_permissions")
    assert sum('"subtype":"init"' in line for line in lines) == 5
    sid = new_session()
    feed(sid, lines)
    feed(sid, [line for line in lines if '"subtype":"init"' in line])  # a resumed run's inits
    notes = rows("SELECT content FROM session_messages WHERE session_id = ? AND role = 'system'"
                 " AND content LIKE ?", sid, "Session started%")
    assert len(notes) == 1
    total = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?", sid)[0][0]
    assert counters(rows, sid) == total
