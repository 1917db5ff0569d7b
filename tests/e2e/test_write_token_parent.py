"""A session's own write token dies with its parent (issue 29): it is refused with 401
at once when the runner token that opened the session is revoked or expires, or when
an operator assigns the session to another machine; and it has a lifetime of its own,
which the runner's writes renew."""
from datetime import datetime
from datetime import timedelta
from datetime import timezone

import pytest

from app.core.clock import from_iso
from app.core.clock import to_iso
from app.db import writing
from app.services import tokens
from tests.api import bearer

SESSIONS = "/api/remote/sessions"
PAST = "2000-01-01T00:00:00.000000Z"
LIFETIME = 24 * 3600


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "WRITE_TOKEN_LIFETIME_SECONDS": LIFETIME}


@pytest.fixture
def opened(app, client):
    """A runner token of machine m1, and a session it opened with its write token."""
    with app.app_context():
        runner_id, runner = tokens.issue("runner", "m1", writing(), expires_in=7 * 86400)
    body = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice"},
                       headers=bearer(runner)).get_json()
    return {"runner_id": runner_id, "runner": runner, "sid": body["session"]["session_id"],
            "write_token": body["write_token"]}


def post(client, opened, seq, secret=None):
    return client.post(f"{SESSIONS}/{opened['sid']}/output",
                       json={"chunks": [{"seq": seq, "data": f"line {seq}"}]},
                       headers=bearer(secret or opened["write_token"]))


def assert_refused(response):
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def write_token_expiry(rows, sid):
    ((expires,),) = rows("SELECT expires_at FROM agent_tokens WHERE session_id = ?", sid)
    return expires


def test_revoking_the_runner_token_refuses_its_write_tokens_at_once(app, client, opened, rows):
    assert post(client, opened, 0).status_code == 200
    with app.app_context():
        assert tokens.revoke(opened["runner_id"], writing())
    assert_refused(post(client, opened, 1))
    complete = client.post(f"{SESSIONS}/{opened['sid']}/complete", json={"exit_code": 0},
                           headers=bearer(opened["write_token"]))
    assert_refused(complete)
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(1,)]
    assert rows("SELECT status FROM agent_sessions") == [("running",)]
    # The write token's own row is untouched: it is refused through its parent.
    assert rows("SELECT revoked_at FROM agent_tokens WHERE session_id IS NOT NULL") == [(None,)]


def test_an_expired_runner_token_refuses_its_write_tokens(client, opened, rows):
    assert post(client, opened, 0).status_code == 200
    rows("UPDATE agent_tokens SET expires_at = ? WHERE id = ?", PAST, opened["runner_id"])
    assert_refused(post(client, opened, 1))
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(1,)]


def test_assigning_the_session_elsewhere_refuses_its_write_token(runner, client, opened, rows):
    assert post(client, opened, 0).status_code == 200
    result = runner.invoke(args=["assign-machine", opened["sid"], "--machine", "m2"])
    assert result.exit_code == 0, result.output
    assert_refused(post(client, opened, 1))
    # The runner token of m1 no longer sees the session either (404, nothing named).
    refused = post(client, opened, 1, secret=opened["runner"])
    assert refused.status_code == 404
    assert "m2" not in refused.get_data(as_text=True)
    result = runner.invoke(args=["assign-machine", opened["sid"], "--machine", "m1"])
    assert result.exit_code == 0, result.output
    assert post(client, opened, 1).status_code == 200


def test_a_write_token_gets_the_lifetime_when_issued(client, opened, rows):
    ((created,),) = rows("SELECT created_at FROM agent_tokens WHERE session_id = ?", opened["sid"])
    expires = write_token_expiry(rows, opened["sid"])
    assert from_iso(expires) - from_iso(created) == timedelta(seconds=LIFETIME)


def test_a_write_token_past_its_lifetime_is_refused(client, opened, rows):
    rows("UPDATE agent_tokens SET expires_at = ? WHERE session_id = ?", PAST, opened["sid"])
    assert_refused(post(client, opened, 0))
    assert post(client, opened, 0, secret=opened["runner"]).status_code == 200  # the runner's works


def test_a_write_renews_a_token_part_of_whose_lifetime_has_passed(client, opened, rows):
    soon = to_iso(datetime.now(timezone.utc) + timedelta(hours=1))
    rows("UPDATE agent_tokens SET expires_at = ? WHERE session_id = ?", soon, opened["sid"])
    before = datetime.now(timezone.utc)
    assert post(client, opened, 0).status_code == 200
    renewed = from_iso(write_token_expiry(rows, opened["sid"]))
    assert before + timedelta(seconds=LIFETIME) <= renewed
    assert renewed <= datetime.now(timezone.utc) + timedelta(seconds=LIFETIME)
    # A write soon after leaves it alone (no UPDATE per request).
    assert post(client, opened, 1).status_code == 200
    assert from_iso(write_token_expiry(rows, opened["sid"])) == renewed


def test_completion_is_not_undone_by_a_later_request(client, opened, rows):
    done = client.post(f"{SESSIONS}/{opened['sid']}/complete", json={"exit_code": 0},
                       headers=bearer(opened["write_token"]))
    assert done.status_code == 200
    graced = write_token_expiry(rows, opened["sid"])
    again = post(client, opened, 0)  # a retried batch after completion: refused, no renewal
    assert again.status_code == 409
    assert write_token_expiry(rows, opened["sid"]) == graced


def test_a_write_token_from_before_expiring_tokens_gets_an_expiry_on_its_next_write(
        client, opened, rows):
    # As a row from before WRITE_TOKEN_LIFETIME_SECONDS: no expiry while its session runs.
    rows("UPDATE agent_tokens SET expires_at = NULL WHERE session_id = ?", opened["sid"])
    assert post(client, opened, 0).status_code == 200
    assert from_iso(write_token_expiry(rows, opened["sid"])) > datetime.now(timezone.utc)


def test_a_session_opened_by_no_token_leaves_its_write_token_unparented(client, opened, rows):
    # Sessions from before migration 0016 have no opened_by_token: only the machine and
    # the token's own state decide.
    rows("UPDATE agent_sessions SET opened_by_token = NULL")
    rows("UPDATE agent_tokens SET revoked_at = ? WHERE id = ?", PAST, opened["runner_id"])
    assert post(client, opened, 0).status_code == 200
    rows("UPDATE agent_sessions SET machine = 'm2'")
    assert_refused(post(client, opened, 1))
