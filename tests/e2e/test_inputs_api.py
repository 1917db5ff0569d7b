"""POST /api/remote/sessions/<id>/messages through the test client with auth on: who may
send input (the owner or an admin, with a user token), what a repeat, an empty or an
oversized prompt, or a completed session gets, and pending_inputs on GET."""
import pytest

from app.db import writing
from app.services import tokens
from tests.api import bearer

SESSIONS = "/api/remote/sessions"
LIMIT = 1024


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "MAX_INPUT_BYTES": LIMIT}


@pytest.fixture
def world(app, client):
    """alice's running session, opened by runner m1 (with its write token), and tokens."""
    with app.app_context():
        secrets = {
            "alice": tokens.issue("user", "alice", writing())[1],
            "bob": tokens.issue("user", "bob", writing())[1],
            "admin": tokens.issue("user", "root", writing(), is_admin=True)[1],
            "runner": tokens.issue("runner", "m1", writing())[1],
        }
    opened = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice", "machine": "m1"},
                         headers=bearer(secrets["runner"]))
    assert opened.status_code == 201
    body = opened.get_json()
    secrets["write"] = body["write_token"]
    return {"sid": body["session"]["session_id"], **secrets}


def send(client, world, who="alice", content="hello", client_id="c-1", sid=None):
    return client.post(f"{SESSIONS}/{sid or world['sid']}/messages",
                       json={"content": content, "client_message_id": client_id},
                       headers=bearer(world[who]))


def count(rows, sid):
    return rows("SELECT COUNT(*) FROM session_inputs WHERE session_id = ?", sid)[0][0]


def test_the_owner_queues_a_prompt_and_a_repeat_returns_it(client, world, rows):
    first = send(client, world, content="run the tests")
    assert first.status_code == 202
    queued = first.get_json()["input"]
    assert set(queued) == {"input_id", "client_message_id", "state", "created_at"}
    assert (queued["client_message_id"], queued["state"]) == ("c-1", "queued")
    again = send(client, world, content="run the tests")
    assert again.status_code == 200
    assert again.get_json()["input"] == queued
    assert count(rows, world["sid"]) == 1
    assert rows("SELECT content, created_by FROM session_inputs") == [("run the tests", "alice")]


def test_an_admin_may_send_to_anyone_s_session(client, world, rows):
    assert send(client, world, who="admin").status_code == 202
    assert rows("SELECT created_by FROM session_inputs") == [("root",)]


@pytest.mark.parametrize("who", ["runner", "write"])
def test_runner_and_session_write_tokens_may_not_send(client, world, rows, who):
    refused = send(client, world, who=who)
    assert refused.status_code == 403
    assert refused.get_json()["error"]["code"] == "wrong_token_kind"
    assert count(rows, world["sid"]) == 0


def test_another_user_s_session_and_an_unknown_one_are_not_found(client, world, rows):
    for response in (send(client, world, who="bob"), send(client, world, sid="no-such-session")):
        assert response.status_code == 404
        assert response.get_json()["error"]["code"] == "session_not_found"
    assert count(rows, world["sid"]) == 0


@pytest.mark.parametrize("body", [
    {"content": "", "client_message_id": "c-1"},
    {"content": " \n\t", "client_message_id": "c-1"},
    {"content": "hi", "client_message_id": ""},
    {"content": "hi"},
    {"client_message_id": "c-1"},
    {"content": 3, "client_message_id": "c-1"},
    {"content": "hi", "client_message_id": "c-1", "extra": True},
    {"content": "nul \u0000", "client_message_id": "c-1"},
])
def test_a_bad_body_is_a_422(client, world, rows, body):
    refused = client.post(f"{SESSIONS}/{world['sid']}/messages", json=body, headers=bearer(world["alice"]))
    assert refused.status_code == 422
    assert refused.get_json()["error"]["code"] == "validation_error"
    assert count(rows, world["sid"]) == 0


def test_content_over_max_input_bytes_is_a_413(client, world, rows):
    assert send(client, world, content="é" * (LIMIT // 2), client_id="fits").status_code == 202
    refused = send(client, world, content="é" * (LIMIT // 2) + "x", client_id="over")
    assert refused.status_code == 413
    error = refused.get_json()["error"]
    assert error["code"] == "input_too_large"
    assert error["details"] == {"bytes": LIMIT + 1, "limit": LIMIT}
    assert count(rows, world["sid"]) == 1


def test_a_completed_session_refuses_input(client, world, rows):
    assert send(client, world, client_id="before").status_code == 202
    done = client.post(f"{SESSIONS}/{world['sid']}/complete", json={"exit_code": 0},
                       headers=bearer(world["runner"]))
    assert done.status_code == 200
    refused = send(client, world, client_id="after")
    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "session_completed"
    assert send(client, world, client_id="before").status_code == 200  # a retry still finds it
    assert count(rows, world["sid"]) == 1


def test_pending_inputs_are_listed_on_the_session_until_applied(client, world, rows):
    sid = world["sid"]
    session = client.get(f"{SESSIONS}/{sid}", headers=bearer(world["alice"])).get_json()["session"]
    assert session["pending_inputs"] == []
    ids = [send(client, world, content=f"p{n}", client_id=f"c-{n}").get_json()["input"]["input_id"]
           for n in range(3)]
    rows("UPDATE session_inputs SET state = 'applied' WHERE input_id = ?", ids[1])
    session = client.get(f"{SESSIONS}/{sid}", headers=bearer(world["admin"])).get_json()["session"]
    pending = session["pending_inputs"]
    assert [p["input_id"] for p in pending] == [ids[0], ids[2]]
    assert set(pending[0]) == {"input_id", "client_message_id", "state", "reason", "created_at"}
    assert [(p["client_message_id"], p["state"], p["reason"]) for p in pending] == [
        ("c-0", "queued", None), ("c-2", "queued", None)]
