"""No response grows without bound (issue: hostile tenant, item 2): a session's GET
carries at most SESSION_MESSAGES_MAX messages, the list carries no context and at most
200 items a page, and a context is at most MAX_CONTEXT_BYTES."""
import json

import pytest

from tests import claude_lines as cl
from tests.api import authed_client
from tests.api import create_session
from tests.api import post_lines

SESSIONS = "/api/remote/sessions"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "SESSION_MESSAGES_MAX": 3}


@pytest.fixture
def client(app):
    """With authentication on: writes carry a runner token, reads alice's user token."""
    return authed_client(app)


def say(client, *texts):
    sid = create_session(client)
    lines = [line for text in texts for line in (cl.assistant(cl.text(text)), cl.result())]
    assert post_lines(client, sid, lines).status_code == 200
    return sid


def test_a_long_transcript_stops_at_the_bound_and_the_cursor_continues_it(client, rows):
    sid = say(client, "one", "two", "three", "four", "five")
    body = client.get(f"{SESSIONS}/{sid}").get_json()["session"]
    assert [m["content"] for m in body["messages"]] == ["one", "two", "three"]
    assert body["messages_truncated"] is True
    assert body["message_count"] == 5  # exact, whatever the page holds
    rest = client.get(f"{SESSIONS}/{sid}/messages", query_string={"after": body["next_cursor"]}).get_json()
    assert [m["content"] for m in rest["messages"]] == ["four", "five"]
    stored = [content for (content,) in rows("SELECT content FROM session_messages WHERE session_id = ?"
                                            " ORDER BY id", sid)]
    assert [m["content"] for m in body["messages"] + rest["messages"]] == stored


@pytest.mark.parametrize("texts", [("one", "two", "three"), ("one",), ()])
def test_a_transcript_within_the_bound_comes_whole(client, texts):
    sid = say(client, *texts) if texts else create_session(client)
    body = client.get(f"{SESSIONS}/{sid}").get_json()["session"]
    assert [m["content"] for m in body["messages"]] == list(texts)
    assert (body["messages_truncated"], body["next_cursor"]) == (False, None)


def test_the_list_leaves_context_out_and_caps_its_page_at_200(client):
    sid = create_session(client, context={"repo": "r" * 1000})
    listed = client.get(SESSIONS).get_json()["sessions"]
    assert [s["session_id"] for s in listed] == [sid]
    assert "context" not in listed[0]
    assert client.get(f"{SESSIONS}/{sid}").get_json()["session"]["context"] == {"repo": "r" * 1000}
    assert client.get(SESSIONS, query_string={"limit": 200}).status_code == 200
    over = client.get(SESSIONS, query_string={"limit": 201})
    assert over.status_code == 422
    assert over.get_json()["error"]["code"] == "invalid_limit"
    assert "200" in over.get_json()["error"]["message"]


def test_a_context_over_64_kib_is_413_and_opens_nothing(client, rows):
    limit = 64 * 1024
    envelope = len(json.dumps({"k": ""}, separators=(",", ":")))
    at_limit = {"k": "x" * (limit - envelope)}
    assert client.post(SESSIONS, json={"session_type": "agent", "context": at_limit}).status_code == 201
    over = client.post(SESSIONS, json={"session_type": "agent", "context": {"k": "x" * limit}})
    assert over.status_code == 413
    error = over.get_json()["error"]
    assert error["code"] == "context_too_large"
    assert error["details"] == {"bytes": limit + envelope, "limit": limit}
    assert rows("SELECT count(*) FROM agent_sessions") == [(1,)]
