"""Hostile or odd input is a 4xx (or is stored safely), never a 500."""
import json

import pytest

from app.providers.json_depth import MAX_DEPTH
from tests import claude_lines as cl
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines

INT64_MAX = 2**63 - 1
SESSIONS = "/api/remote/sessions"


def error_of(response, status):
    assert response.status_code == status, response.get_json()
    return response.get_json()["error"]


def nested(depth):
    return json.loads("[" * depth + "]" * depth)


# --- bodies that are not usable JSON -------------------------------------------------


@pytest.mark.parametrize("path", ["", "/{sid}/output", "/{sid}/complete", "/{sid}/usage"])
def test_deeply_nested_json_body_is_422_invalid_json(client, path):
    sid = create_session(client)
    response = client.post(SESSIONS + path.format(sid=sid), data="[" * 50000,
                           content_type="application/json")
    assert error_of(response, 422)["code"] == "invalid_json"


def test_oversized_body_is_413_whatever_its_content_type(app, client):
    sid = create_session(client)
    app.config["MAX_CONTENT_LENGTH"] = 1024
    for content_type in ("text/plain", "application/octet-stream", None):
        response = client.post(f"{SESSIONS}/{sid}/output", data="x" * 4096,
                               content_type=content_type)
        assert error_of(response, 413)["code"] == "request_entity_too_large"


def test_small_body_that_is_not_json_is_still_422(client):
    response = client.post(SESSIONS, data="session_type=chat", content_type="text/plain")
    assert error_of(response, 422)["code"] == "invalid_json"


# --- integers the database cannot store ----------------------------------------------


@pytest.mark.parametrize("seq", [2**63, 2**64, 10**30])
def test_seq_beyond_int64_is_422(client, seq):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/output", json={"chunks": [{"seq": seq, "data": "x"}]})
    assert error_of(response, 422)["code"] == "validation_error"


def test_largest_int64_seq_is_stored(client, rows):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/output",
                           json={"chunks": [{"seq": INT64_MAX, "data": "x"}]})
    assert response.status_code == 200
    assert rows("SELECT producer_seq FROM remote_runtime_outputs") == [(INT64_MAX,)]


@pytest.mark.parametrize("field", ["input_tokens", "output_tokens", "requests"])
@pytest.mark.parametrize("value", [2**63, 2**64])
def test_usage_counts_beyond_int64_are_422(client, field, value):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/usage", json={"report_id": "r1", field: value})
    error = error_of(response, 422)
    assert field in error["details"]["fields"]
    assert get_session(client, sid)["request_count"] == 0


@pytest.mark.parametrize("exit_code", [2**31, -(2**31) - 1, 2**63, -(2**63) - 1])
def test_exit_code_out_of_range_is_422_and_session_stays_open(client, exit_code):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": exit_code})
    assert "exit_code" in error_of(response, 422)["details"]["fields"]
    assert get_session(client, sid)["status"] == "running"


@pytest.mark.parametrize("exit_code, status", [(-(2**31), "failed"), (2**31 - 1, "failed"),
                                               (0, "completed")])
def test_exit_code_within_range_is_stored(client, exit_code, status):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": exit_code})
    assert response.status_code == 200
    assert response.get_json()["session"]["exit_code"] == exit_code
    assert response.get_json()["session"]["status"] == status


@pytest.mark.parametrize("after", [str(2**63), str(10**20), "9" * 400])
def test_message_cursor_beyond_int64_is_422(client, after):
    sid = create_session(client)
    response = client.get(f"{SESSIONS}/{sid}/messages?after={after}")
    assert error_of(response, 422)["code"] == "invalid_cursor"


def test_largest_message_cursor_is_an_empty_page(client):
    sid = create_session(client)
    response = client.get(f"{SESSIONS}/{sid}/messages?after={INT64_MAX}")
    assert response.status_code == 200
    assert response.get_json()["messages"] == []


# --- strings UTF-8 cannot hold (lone surrogates) -------------------------------------


def test_lone_surrogate_in_user_id_is_422(client):
    response = client.post(SESSIONS, json={"session_type": "chat", "user_id": "u\ud800"})
    assert "user_id" in error_of(response, 422)["details"]["fields"]


def test_lone_surrogate_in_report_id_is_422(client):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/usage", json={"report_id": "r\udfff"})
    assert "report_id" in error_of(response, 422)["details"]["fields"]


@pytest.mark.parametrize("stream", ["stdout", "stderr", "system"])
def test_lone_surrogate_in_chunk_data_is_replaced_and_the_line_kept(client, rows, stream):
    sid = create_session(client)
    response = post_lines(client, sid, ["a\ud800b", "\udc00"], stream=stream)
    assert response.status_code == 200
    # stored as valid UTF-8: reading it back would fail otherwise
    stored = rows("SELECT payload FROM remote_runtime_outputs ORDER BY event_index")
    assert stored == [("a\ufffdb",), ("\ufffd",)]


def test_lone_surrogate_escaped_inside_an_agent_line_is_replaced_in_the_transcript(client):
    sid = create_session(client)
    line = cl.assistant(cl.text("bad \ud800 text"))
    assert "\\ud800" in line  # valid JSON text: the escape is legal there
    assert post_lines(client, sid, [line, cl.result()]).status_code == 200
    (message,) = get_session(client, sid)["messages"]
    assert message["content"] == "bad \ufffd text"


def test_lone_surrogates_in_context_are_kept_as_json_escapes(client, rows):
    context = {"note": "x\ud800y", "k\udfff": ["\ud83d"]}
    sid = create_session(client, "chat", context)
    assert get_session(client, sid)["context"] == context
    (stored,) = rows("SELECT context FROM agent_sessions WHERE session_id = ?", sid)
    assert stored[0].isascii()
    assert client.get(SESSIONS).status_code == 200


# --- nesting -------------------------------------------------------------------------


def test_context_nested_too_deep_is_422_and_listing_still_works(client):
    response = client.post(SESSIONS, json={"session_type": "chat",
                                           "context": {"a": nested(MAX_DEPTH)}})
    assert "context" in error_of(response, 422)["details"]["fields"]
    sid = create_session(client, "chat", {"a": nested(MAX_DEPTH - 1)})
    assert client.get(SESSIONS).status_code == 200
    assert get_session(client, sid)["context"] == {"a": nested(MAX_DEPTH - 1)}


def test_deeply_nested_stdout_line_is_buffered_and_ignored(client, rows):
    sid = create_session(client)
    deep = "[" * 50000
    too_deep = cl.assistant(cl.tool_use("t1", tool_input={"x": nested(MAX_DEPTH + 1)}))
    response = post_lines(client, sid, [deep, too_deep, cl.assistant(cl.text("fine")), cl.result()])
    assert response.status_code == 200
    assert response.get_json()["accepted"] == 4
    session = get_session(client, sid)
    assert [m["content"] for m in session["messages"]] == ["fine"]
    payloads = rows("SELECT payload FROM remote_runtime_outputs ORDER BY event_index")
    assert payloads[0] == (deep,)


def test_usage_figures_above_the_per_report_bound_are_422(client):
    sid = create_session(client)
    response = client.post(f"/api/remote/sessions/{sid}/usage",
                           json={"report_id": "r", "input_tokens": 2**40 + 1})
    assert response.status_code == 422
    assert "input_tokens" in response.get_json()["error"]["details"]["fields"]
