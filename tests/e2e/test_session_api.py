"""The session API through the Flask test client: payloads match the rows."""
import sqlite3

from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines


def rows(db_path, sql, *params):
    with sqlite3.connect(db_path) as conn:
        return conn.execute(sql, params).fetchall()


def test_get_payload_matches_rows(client, db_path):
    sid = create_session(client, "agent")
    response = post_lines(client, sid, [
        cl.system_init(),
        cl.assistant(cl.text("Looking."), cl.tool_use("toolu_9")),
        cl.tool_result("toolu_9"),
        cl.assistant(cl.text("Found it.")),
        cl.result(),
    ])
    assert response.status_code == 200
    assert response.get_json() == {"accepted": 5, "duplicates": 0, "last_event_index": 4}

    session = get_session(client, sid)
    stored = rows(db_path, "SELECT id, role, content FROM session_messages "
                  "WHERE session_id = ? ORDER BY id", sid)
    assert [(m["id"], m["role"], m["content"]) for m in session["messages"]] == stored
    assert session["message_count"] == len(stored) == 2
    assert session["messages"][1]["content"] == "Looking.\n\nFound it."
    assert [b["type"] for b in session["messages"][1]["content_blocks"]] == ["tool_use"]
    assert "turn_key" not in session["messages"][1]
    assert "next_event_index" not in session
    assert complete(client, sid).get_json()["session"]["status"] == "completed"
