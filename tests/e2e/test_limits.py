"""Configurable limits, each with its own clear error, none losing accepted data."""
import pytest

from app.db import writing
from app.services import tokens
from tests.api import create_session
from tests.api import post_lines


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "MAX_CHUNKS_PER_REQUEST": 3, "MAX_LINE_LENGTH": 20,
            "MAX_CONTENT_LENGTH": 4096}


def stored(rows, sid):
    return rows("SELECT event_index, payload FROM remote_runtime_outputs WHERE session_id = ?"
                " ORDER BY event_index", sid)


def test_too_many_chunks_is_413_and_stores_nothing(client, rows):
    sid = create_session(client)
    assert post_lines(client, sid, ["a", "b"]).status_code == 200
    response = post_lines(client, sid, ["c", "d", "e", "f"], start_seq=2)
    assert response.status_code == 413
    assert response.get_json()["error"] == {
        "code": "too_many_chunks", "message": "at most 3 chunks per request; split the batch",
        "details": {"chunks": 4, "limit": 3}}
    assert stored(rows, sid) == [(0, "a"), (1, "b")]
    assert post_lines(client, sid, ["c", "d", "e"], start_seq=2).status_code == 200


def test_a_line_over_the_limit_is_413_naming_it_and_the_batch_is_not_stored(client, rows):
    sid = create_session(client)
    response = post_lines(client, sid, ["short", "x" * 21, "fine"])
    assert response.status_code == 413
    error = response.get_json()["error"]
    assert error["code"] == "line_too_long"
    assert error["details"] == {"index": 1, "seq": 1, "length": 21, "limit": 20}
    assert stored(rows, sid) == []
    assert post_lines(client, sid, ["x" * 20]).status_code == 200


def test_a_body_over_max_content_length_is_413(client, rows):
    sid = create_session(client)
    response = post_lines(client, sid, ["y" * 10] * 3)
    assert response.status_code == 200
    huge = client.post(f"/api/remote/sessions/{sid}/output", data=b"{" + b" " * 5000 + b"}",
                       content_type="application/json")
    assert huge.status_code == 413
    assert huge.get_json()["error"]["code"] == "request_entity_too_large"
    assert len(stored(rows, sid)) == 3


class TestRateLimit:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "RATE_LIMIT_REQUESTS": 3,
                "RATE_LIMIT_WINDOW_SECONDS": 3600}

    def test_a_token_over_its_rate_is_429_with_retry_after_and_others_go_on(self, app, client):
        with app.app_context():
            alice = tokens.issue("user", "alice", writing())[1]
            bob = tokens.issue("user", "bob", writing())[1]
        statuses = [client.get("/api/remote/sessions",
                               headers={"Authorization": f"Bearer {alice}"}).status_code
                    for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = client.get("/api/remote/sessions", headers={"Authorization": f"Bearer {alice}"})
        assert limited.get_json()["error"]["code"] == "rate_limited"
        # One token per 1200 s refills: the client is told to wait about that long.
        assert 1100 <= int(limited.headers["Retry-After"]) <= 1200
        assert client.get("/api/remote/sessions",
                          headers={"Authorization": f"Bearer {bob}"}).status_code == 200
