"""Bad input gets a clear JSON error and loses nothing already accepted."""
import pytest

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


def test_oversized_request_is_413(app, client):
    app.config["MAX_CONTENT_LENGTH"] = 1024
    sid = create_session(client)
    response = post_lines(client, sid, ["x" * 4096])
    assert error_of(response, 413)["code"] == "request_entity_too_large"
    assert get_session(client, sid)["message_count"] == 0


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
