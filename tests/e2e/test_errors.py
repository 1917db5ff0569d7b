"""Bad input gets a clear JSON error and loses nothing already accepted."""
import logging
import sqlite3
from contextlib import closing

import pytest
from sqlalchemy.exc import OperationalError

from app import create_app
from app.core.errors import SessionNotFound
from app.extensions import db
from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines


def error_of(response, status):
    assert response.status_code == status
    body = response.get_json()
    assert set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def test_unknown_session_is_404_on_every_route(client):
    for method, path in [("get", ""), ("get", "/messages"), ("post", "/output"),
                         ("post", "/complete"), ("post", "/usage")]:
        body = {"chunks": [{"data": "x"}]} if path == "/output" else {"report_id": "r"}
        if path == "/complete":
            body = {}
        response = getattr(client, method)(f"/api/remote/sessions/nope{path}",
                                           json=body if method == "post" else None)
        assert error_of(response, 404)["code"] == "session_not_found"


@pytest.mark.parametrize("body, field", [
    ({"session_type": "spaceship"}, "session_type"),
    ({}, "session_type"),
    ({"session_type": "chat", "context": "not a dict"}, "context"),
    ({"session_type": "chat", "surprise": 1}, "surprise"),
    ({"session_type": "chat", "provider": "nobody"}, "provider"),
])
def test_bad_session_body_is_422_naming_the_field(client, body, field):
    error = error_of(client.post("/api/remote/sessions", json=body), 422)
    assert error["code"] == "validation_error"
    assert field in error["details"]["fields"]


def test_non_json_body_is_422(client):
    response = client.post("/api/remote/sessions", data="{oops", content_type="application/json")
    assert error_of(response, 422)["code"] == "invalid_json"


@pytest.mark.parametrize("body", [
    {"chunks": []},
    {"chunks": [{"seq": -1, "data": "x"}]},
    {"chunks": [{"seq": "1", "data": "x"}]},
    {"chunks": [{"seq": 1, "stream": "tty", "data": "x"}]},
    {"chunks": [{"seq": 1}]},
    {"lines": ["x"]},
])
def test_bad_output_body_is_422_and_changes_nothing(client, body):
    sid = create_session(client)
    post_lines(client, sid, [cl.assistant(cl.text("kept")), cl.result()])
    before = get_session(client, sid)
    error_of(client.post(f"/api/remote/sessions/{sid}/output", json=body), 422)
    assert get_session(client, sid) == before


def test_oversized_request_is_413_and_stores_nothing(app, client, rows):
    sid = create_session(client)
    assert post_lines(client, sid, ["accepted earlier"]).status_code == 200
    app.config["MAX_CONTENT_LENGTH"] = 1024
    response = post_lines(client, sid, ["x" * 4096], start_seq=1)
    assert error_of(response, 413)["code"] == "request_entity_too_large"
    stored = rows("SELECT event_index, producer_seq, payload FROM remote_runtime_outputs")
    assert stored == [(0, 0, "accepted earlier")]


def test_output_after_completion_is_409_but_retries_are_fine(client):
    sid = create_session(client)
    post_lines(client, sid, ["a"])
    complete(client, sid)
    assert post_lines(client, sid, ["a"]).get_json()["duplicates"] == 1
    error = error_of(post_lines(client, sid, ["a", "b"]), 409)
    assert error["code"] == "session_completed"


def test_bad_paging_arguments_are_422(client):
    sid = create_session(client)
    assert error_of(client.get("/api/remote/sessions?limit=0"), 422)["code"] == "invalid_limit"
    assert error_of(client.get("/api/remote/sessions?cursor=%%%"), 422)["code"] == "invalid_cursor"
    response = client.get(f"/api/remote/sessions/{sid}/messages?after=x")
    assert error_of(response, 422)["code"] == "invalid_cursor"
    response = client.get(f"/api/remote/sessions/{sid}/messages?format=yaml")
    assert error_of(response, 422)["code"] == "invalid_format"


def test_unknown_route_and_wrong_method_use_the_envelope(client):
    assert error_of(client.get("/api/nothing-here"), 404)["code"] == "not_found"
    assert error_of(client.delete("/api/remote/sessions"), 405)["code"] == "method_not_allowed"


def test_wrong_method_keeps_the_allow_header(client):
    response = client.delete("/api/remote/sessions")
    assert error_of(response, 405)["code"] == "method_not_allowed"
    assert response.content_type == "application/json"
    assert {"GET", "POST"} <= {m.strip() for m in response.headers["Allow"].split(",")}
    response = client.get("/api/remote/sessions/some-id/output")
    assert error_of(response, 405)["code"] == "method_not_allowed"
    assert "POST" in response.headers["Allow"]


@pytest.fixture
def bare_app(app, database_url):
    """A production-like app (TESTING off) on the migrated test database."""
    bare = create_app({"SQLALCHEMY_DATABASE_URI": database_url, "AUTH_DISABLED": True,
                       "SQLITE_BUSY_TIMEOUT": 0.05})
    assert not bare.testing
    yield bare
    with bare.app_context():
        db.engine.dispose()


class SessionGone(SessionNotFound):
    code = "session_gone"


def add_route(app, rule, exc):
    def fail():
        raise exc
    app.add_url_rule(rule, rule.strip("/"), fail)


@pytest.mark.parametrize("testing", [False, True])
def test_unexpected_error_is_a_500_envelope_and_is_logged(bare_app, caplog, testing):
    bare_app.testing = testing  # TESTING would propagate an *unhandled* exception
    add_route(bare_app, "/boom", RuntimeError("kaput"))
    with caplog.at_level(logging.ERROR, logger=bare_app.logger.name):
        response = bare_app.test_client().get("/boom")
    error = error_of(response, 500)
    assert error["code"] == "internal_error"
    assert "kaput" not in response.get_data(as_text=True)
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)


def test_service_error_subclasses_get_their_ancestor_status(bare_app):
    add_route(bare_app, "/gone", SessionGone("it went", {"session_id": "s"}))
    error = error_of(bare_app.test_client().get("/gone"), 404)
    assert (error["code"], error["details"]) == ("session_gone", {"session_id": "s"})


@pytest.mark.sqlite_only  # SQLite's database-wide write lock; PostgreSQL writers queue per row
def test_locked_database_is_503_with_retry_after(bare_app, db_path):
    client = bare_app.test_client()
    sid = create_session(client)
    with closing(sqlite3.connect(db_path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the timeout
        response = post_lines(client, sid, ["waits in vain"])
        other.execute("ROLLBACK")
    assert error_of(response, 503)["code"] == "database_busy"
    assert int(response.headers["Retry-After"]) > 0
    assert post_lines(client, sid, ["waits in vain"]).status_code == 200


def test_other_operational_errors_stay_500(bare_app):
    add_route(bare_app, "/disk", OperationalError("INSERT", {}, Exception("disk I/O error")))
    add_route(bare_app, "/locked", OperationalError("INSERT", {}, Exception("database is locked")))
    client = bare_app.test_client()
    assert error_of(client.get("/disk"), 500)["code"] == "internal_error"
    response = client.get("/locked")
    assert error_of(response, 503)["code"] == "database_busy"
    assert "Retry-After" in response.headers


def test_a_body_that_does_not_parse_says_where(client):
    response = client.post("/api/remote/sessions", data='{"session_type": "chat",\n "x": }',
                           content_type="application/json")
    error = error_of(response, 422)
    assert error["code"] == "invalid_json"
    assert (error["details"]["line"], error["details"]["column"]) == (2, 7)
    assert error["details"]["position"] == 31
    assert "line 2 column 7" in error["message"]


def test_a_body_without_a_json_content_type_names_the_header_to_send(client):
    response = client.post("/api/remote/sessions", data='{"session_type": "chat"}',
                           content_type="application/x-www-form-urlencoded")
    error = error_of(response, 422)
    assert error["code"] == "invalid_json"
    assert "Content-Type: application/json" in error["message"]
    assert error["details"]["content_type"] == "application/x-www-form-urlencoded"


@pytest.mark.parametrize("body, got", [("[]", "an array"), ("null", "null"), ('"s"', "a string"),
                                       ("1.5", "a number"), ("true", "a boolean")])
def test_a_body_that_is_not_an_object_names_what_came(client, body, got):
    response = client.post("/api/remote/sessions", data=body, content_type="application/json")
    error = error_of(response, 422)
    assert error["details"]["got"] == got and got in error["message"]


def test_a_body_that_is_not_utf8_says_which_byte(client):
    response = client.post("/api/remote/sessions", data=b'{"a": "\xff"}',
                           content_type="application/json")
    error = error_of(response, 422)
    assert error["code"] == "invalid_json" and error["details"]["position"] == 7
