"""Scoped runner tokens (issue: hostile tenant, item 4), through the API with auth on:
a runner serves the users it is scoped to, tokens expire, and a session's own write
token writes that session only, until its completion plus the grace period."""
import pytest

from app.db import writing
from app.services import tokens
from tests import claude_lines as cl
from tests.api import bearer

SESSIONS = "/api/remote/sessions"
PAST = "2000-01-01T00:00:00.000000Z"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "SESSION_TOKEN_GRACE_SECONDS": 3600}


@pytest.fixture
def issue(app):
    def issue(kind, name, **options):
        with app.app_context():
            return tokens.issue(kind, name, writing(), **options)[1]
    return issue


def open_session(client, secret, **fields):
    return client.post(SESSIONS, json={"session_type": "agent", **fields}, headers=bearer(secret))


def post(client, sid, secret, data="x", seq=0):
    return client.post(f"{SESSIONS}/{sid}/output", json={"chunks": [{"seq": seq, "data": data}]},
                       headers=bearer(secret))


def test_a_scoped_runner_opens_sessions_for_its_users_only(client, issue, rows):
    runner = issue("runner", "m1", users=("alice", "carol"))
    assert open_session(client, runner, user_id="alice").status_code == 201
    assert open_session(client, runner, user_id="carol").status_code == 201
    for owner in ("bob", None):
        refused = open_session(client, runner, user_id=owner)
        assert refused.status_code == 403
        error = refused.get_json()["error"]
        assert error["code"] == "not_permitted"
        assert "opens sessions for 'alice', 'carol' only" in error["message"]
        assert error["details"] == {"user_id": owner, "token_users": ["alice", "carol"]}
    assert rows("SELECT user_id FROM agent_sessions ORDER BY user_id") == [("alice",), ("carol",)]


def test_a_runner_scoped_to_one_user_opens_for_that_user_by_default(client, issue):
    runner = issue("runner", "m1", users=("alice",))
    response = open_session(client, runner)
    assert response.status_code == 201
    assert response.get_json()["session"]["user_id"] == "alice"


def test_a_scoped_runner_cannot_write_another_users_session_on_its_machine(client, issue, rows):
    anyone = issue("runner", "m1")
    scoped = issue("runner", "m1", users=("alice",))
    sid = open_session(client, anyone, user_id="bob").get_json()["session"]["session_id"]
    refused = post(client, sid, scoped)
    assert refused.status_code == 404  # like an unknown session: the owner is not named
    assert refused.get_json()["error"]["details"] == {"session_id": sid}
    assert "bob" not in refused.get_data(as_text=True)
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(0,)]


def test_an_expired_token_is_refused_like_an_unknown_one(client, issue, rows):
    runner = issue("runner", "m1", expires_in=3600)
    sid = open_session(client, runner, user_id="alice").get_json()["session"]["session_id"]
    assert post(client, sid, runner).status_code == 200
    rows("UPDATE agent_tokens SET expires_at = ? WHERE name = 'm1' AND session_id IS NULL", PAST)
    for response in (post(client, sid, runner, seq=1), open_session(client, runner, user_id="alice")):
        assert response.status_code == 401
        assert response.get_json()["error"]["code"] == "invalid_token"
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(1,)]


def test_opening_returns_a_write_token_for_that_session_alone(client, issue, rows):
    runner = issue("runner", "m1", users=("alice",))
    first = open_session(client, runner).get_json()
    other = open_session(client, runner).get_json()["session"]["session_id"]
    sid, write_token = first["session"]["session_id"], first["write_token"]
    assert write_token.startswith("tlr_") and write_token != runner

    assert post(client, sid, write_token, cl.assistant(cl.text("hi"))).status_code == 200
    elsewhere = post(client, other, write_token)
    assert elsewhere.status_code == 404
    assert elsewhere.get_json()["error"]["details"] == {"session_id": other}
    assert open_session(client, write_token).status_code == 403  # it opens nothing either
    assert rows("SELECT session_id FROM remote_runtime_outputs") == [(sid,)]
    assert rows("SELECT session_id, allowed_users FROM agent_tokens WHERE session_id = ?",
                sid) == [(sid, '["alice"]')]


def test_a_session_token_expires_at_completion_plus_the_grace_period(client, issue, rows):
    runner = issue("runner", "m1")
    opened = open_session(client, runner, user_id="alice").get_json()
    sid, write_token = opened["session"]["session_id"], opened["write_token"]
    done = client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 0}, headers=bearer(write_token))
    assert done.status_code == 200
    ((completed, expires),) = rows("SELECT s.updated_at, t.expires_at FROM agent_sessions s"
                                   " JOIN agent_tokens t ON t.session_id = s.session_id")
    assert expires > completed
    # Within the grace period it still reports usage; past it, it is refused.
    usage = {"report_id": "r1", "input_tokens": 3}
    assert client.post(f"{SESSIONS}/{sid}/usage", json=usage, headers=bearer(write_token)).status_code == 200
    rows("UPDATE agent_tokens SET expires_at = ? WHERE session_id = ?", PAST, sid)
    late = client.post(f"{SESSIONS}/{sid}/usage", json={**usage, "report_id": "r2"},
                       headers=bearer(write_token))
    assert late.status_code == 401
    assert rows("SELECT total_input_tokens FROM agent_sessions") == [(3,)]


def test_a_user_opening_a_session_gets_no_write_token(client, issue):
    alice = issue("user", "alice")
    body = open_session(client, alice).get_json()
    assert "write_token" not in body and body["session"]["user_id"] == "alice"
