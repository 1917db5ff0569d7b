"""Configurable limits, each with its own clear error, none losing accepted data."""
import http.client
import json
import sqlite3

import pytest

from app.db import writing
from app.services import tokens
from tests.api import create_session
from tests.api import post_lines
from tests.servers import call
from tests.servers import gunicorn


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



def post_chunked(server, path, body, piece=700):
    """(status, JSON body) of a POST whose body goes as HTTP/1.1 chunks, no Content-Length."""
    host, port = server.address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        pieces = (body[at:at + piece] for at in range(0, len(body), piece))
        conn.request("POST", path, body=pieces, encode_chunked=True,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_chunked_body_over_max_content_length_is_413_not_422_through_gunicorn(tmp_path):
    """werkzeug cuts a chunked body at the limit; the cut must not read as bad JSON."""
    limit = 2000
    with gunicorn(tmp_path, env={"TURNLOG_MAX_CONTENT_LENGTH": str(limit)}) as server:
        status, body = call(server.base, "POST", "/api/remote/sessions", {"session_type": "agent"})
        sid = body["session"]["session_id"]
        path = f"/api/remote/sessions/{sid}/output"

        def output(seq, data):
            return json.dumps({"chunks": [{"seq": seq, "data": data}]}).encode()

        assert post_chunked(server, path, output(0, "kept"))[0] == 200
        status, body = post_chunked(server, path, output(1, "z" * 5000))
        assert (status, body["error"]["code"]) == (413, "request_entity_too_large")
        exactly = output(1, "z" * (limit - len(output(1, ""))))
        assert len(exactly) == limit
        assert post_chunked(server, path, exactly)[0] == 200
        assert post_chunked(server, path, output(2, "z" * 2 * limit))[0] == 413
    stored = sqlite3.connect(server.db_file).execute(
        "SELECT event_index, length(payload) FROM remote_runtime_outputs WHERE session_id = ?"
        " ORDER BY event_index", (sid,)).fetchall()
    assert stored == [(0, 4), (1, len(exactly) - len(output(1, "")))]
