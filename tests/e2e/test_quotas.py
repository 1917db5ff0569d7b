"""Quotas (issue: hostile tenant, item 3), through the API with auth on: sessions per
token per minute, output bytes per session, running sessions per user. Each refusal
names its limit, says when to retry, and keeps everything accepted before it."""
import pytest

from app.db import writing
from app.services import tokens
from tests.api import bearer

SESSIONS = "/api/remote/sessions"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "SESSIONS_PER_TOKEN_PER_MINUTE": 5,
            "MAX_SESSION_OUTPUT_BYTES": 100, "MAX_OPEN_SESSIONS_PER_USER": 0}


@pytest.fixture
def runner_token(app):
    with app.app_context():
        return tokens.issue("runner", "m1", writing())[1]


def open_session(client, secret, user="alice"):
    return client.post(SESSIONS, json={"session_type": "agent", "user_id": user}, headers=bearer(secret))


def test_a_burst_past_the_sessions_per_minute_quota_gets_429_until_the_window_moves(
        client, runner_token, rows):
    assert [open_session(client, runner_token).status_code for _ in range(5)] == [201] * 5
    refused = open_session(client, runner_token)
    assert refused.status_code == 429
    retry_after = int(refused.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    error = refused.get_json()["error"]
    assert error["code"] == "quota_exceeded"
    assert "the limit is 5 a minute (TURNLOG_SESSIONS_PER_TOKEN_PER_MINUTE)" in error["message"]
    assert error["details"]["quota"] == "sessions_per_token_per_minute"
    assert rows("SELECT COUNT(*) FROM agent_sessions") == [(5,)]
    # A minute later (the sessions' stamps moved back by one), the next one is let in.
    rows("UPDATE agent_sessions SET created_at = '2000-01-01T00:00:00.000000Z'")
    assert open_session(client, runner_token).status_code == 201
    assert rows("SELECT COUNT(*) FROM agent_sessions") == [(6,)]


def test_the_quota_is_per_token(app, client, runner_token):
    for _ in range(5):
        open_session(client, runner_token)
    with app.app_context():
        other = tokens.issue("runner", "m2", writing())[1]
    assert open_session(client, runner_token).status_code == 429
    assert open_session(client, other).status_code == 201


def test_output_past_the_session_byte_quota_is_413_and_keeps_what_was_accepted(
        client, runner_token, rows):
    sid = open_session(client, runner_token).get_json()["session"]["session_id"]
    url = f"{SESSIONS}/{sid}/output"
    accepted = client.post(url, json={"chunks": [{"seq": 0, "data": "é" * 40}]}, headers=bearer(runner_token))
    assert accepted.status_code == 200  # 80 bytes of UTF-8
    over = client.post(url, json={"chunks": [{"seq": 1, "data": "a" * 10}, {"seq": 2, "data": "b" * 11}]},
                       headers=bearer(runner_token))
    assert over.status_code == 413
    error = over.get_json()["error"]
    assert error["code"] == "session_output_limit"
    assert "TURNLOG_MAX_SESSION_OUTPUT_BYTES" in error["message"]
    assert error["details"] == {"limit": 100, "output_bytes": 80, "batch_bytes": 21}
    assert rows("SELECT producer_seq FROM remote_runtime_outputs") == [(0,)]
    assert rows("SELECT output_bytes FROM agent_sessions") == [(80,)]
    # What still fits goes in; a batch already stored is a duplicate, not an overflow.
    fits = client.post(url, json={"chunks": [{"seq": 1, "data": "a" * 20}]}, headers=bearer(runner_token))
    assert fits.status_code == 200
    again = client.post(url, json={"chunks": [{"seq": 0, "data": "é" * 40}]}, headers=bearer(runner_token))
    assert again.status_code == 200 and again.get_json()["duplicates"] == 1
    assert rows("SELECT output_bytes FROM agent_sessions") == [(100,)]


class TestOpenSessionsPerUser:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "MAX_OPEN_SESSIONS_PER_USER": 2}

    def test_a_user_at_the_limit_gets_429_until_a_session_completes(self, client, runner_token, rows):
        first = open_session(client, runner_token).get_json()["session"]["session_id"]
        assert open_session(client, runner_token).status_code == 201
        refused = open_session(client, runner_token)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        error = refused.get_json()["error"]
        assert error["details"]["quota"] == "open_sessions_per_user"
        assert "'alice' has 2 sessions running; the limit is 2" in error["message"]
        assert open_session(client, runner_token, user="bob").status_code == 201  # per user
        done = client.post(f"{SESSIONS}/{first}/complete", json={"exit_code": 0}, headers=bearer(runner_token))
        assert done.status_code == 200
        assert open_session(client, runner_token).status_code == 201


class TestOpenSessionsPerUserComparesNormalisedIds:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "MAX_OPEN_SESSIONS_PER_USER": 2}

    def test_case_and_blanks_do_not_make_another_user(self, client, runner_token):
        assert open_session(client, runner_token, user="QUSER").status_code == 201
        assert open_session(client, runner_token, user="quser ").status_code == 201
        refused = open_session(client, runner_token, user=" Quser")
        assert refused.status_code == 429
        assert refused.get_json()["error"]["details"]["quota"] == "open_sessions_per_user"


class TestSessionsPerUserPerDay:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "MAX_SESSIONS_PER_USER_PER_DAY": 3}

    def test_a_user_past_the_day_quota_gets_429_until_the_day_ends(self, client, runner_token, rows):
        for user in ("QUSER", "quser ", "Quser"):
            assert open_session(client, runner_token, user=user).status_code == 201
        refused = open_session(client, runner_token, user="quser")
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["Retry-After"]) <= 86400
        error = refused.get_json()["error"]
        assert error["code"] == "quota_exceeded"
        assert error["details"]["quota"] == "sessions_per_user_per_day"
        assert "TURNLOG_MAX_SESSIONS_PER_USER_PER_DAY" in error["message"]
        assert rows("SELECT user_key, sessions_opened FROM user_day_usage") == [("quser", 3)]
        assert rows("SELECT COUNT(*) FROM agent_sessions") == [(3,)]
        assert open_session(client, runner_token, user="bob").status_code == 201
        # The next day (today's counter moved back a day) the user opens again.
        rows("UPDATE user_day_usage SET day = '2000-01-01'")
        assert open_session(client, runner_token, user="QUSER").status_code == 201


class TestOutputBytesPerUserPerDay:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "MAX_OUTPUT_BYTES_PER_USER_PER_DAY": 100,
                "MAX_SESSION_OUTPUT_BYTES": 0}

    def test_a_runner_writing_full_speed_is_stopped_and_keeps_what_was_accepted(
            self, client, runner_token, rows):
        """Several sessions of one user (spelt two ways) share the day's bytes: the batch
        that would pass them is refused whole with 429, and every byte before it stays."""
        first = open_session(client, runner_token, user="QUSER").get_json()["session"]["session_id"]
        second = open_session(client, runner_token, user="quser ").get_json()["session"]["session_id"]
        statuses, seq = [], 0
        for sid in (first, second, first, second, first):
            response = client.post(f"{SESSIONS}/{sid}/output", json={"chunks": [
                {"seq": seq, "data": "x" * 30}]}, headers=bearer(runner_token))
            statuses.append(response.status_code)
            seq += 1
        assert statuses == [200, 200, 200, 429, 429]
        refused = response.get_json()["error"]
        assert refused["details"]["quota"] == "output_bytes_per_user_per_day"
        assert refused["details"]["output_bytes"] == 90 and refused["details"]["batch_bytes"] == 30
        assert "TURNLOG_MAX_OUTPUT_BYTES_PER_USER_PER_DAY" in refused["message"]
        assert 1 <= int(response.headers["Retry-After"]) <= 86400
        assert rows("SELECT SUM(output_bytes) FROM agent_sessions") == [(90,)]
        assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(3,)]
        assert rows("SELECT user_key, output_bytes FROM user_day_usage") == [("quser", 90)]
        # What still fits goes in.
        fits = client.post(f"{SESSIONS}/{second}/output", json={"chunks": [{"seq": 9, "data": "y" * 10}]},
                           headers=bearer(runner_token))
        assert fits.status_code == 200
        assert rows("SELECT output_bytes FROM user_day_usage") == [(100,)]
