"""NUL ("\\u0000"): legal in JSON, refused by PostgreSQL text. Never a 500, on either backend.

Identifiers holding one are a 422, raw lines and transcript text keep it as
U+FFFD (as with lone surrogates), and a session id holding one is unknown.
"""
import pytest

from tests import claude_lines as cl
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines

SESSIONS = "/api/remote/sessions"


def error_of(response, status):
    assert response.status_code == status, response.get_data()
    return response.get_json()["error"]


@pytest.mark.parametrize("field", ["user_id", "machine"])
def test_nul_in_an_identifier_of_a_new_session_is_422(client, rows, field):
    response = client.post(SESSIONS, json={"session_type": "chat", field: "a\x00b"})
    assert field in error_of(response, 422)["details"]["fields"]
    assert rows("SELECT COUNT(*) FROM agent_sessions") == [(0,)]


def test_nul_in_a_report_id_is_422_and_nothing_is_counted(client):
    sid = create_session(client)
    response = client.post(f"{SESSIONS}/{sid}/usage", json={"report_id": "r\x00", "requests": 1})
    assert "report_id" in error_of(response, 422)["details"]["fields"]
    assert get_session(client, sid)["request_count"] == 0


def test_nul_in_a_raw_line_is_kept_as_a_replacement_character(client, rows):
    sid = create_session(client)
    assert post_lines(client, sid, ["a\x00b"]).status_code == 200
    assert rows("SELECT payload FROM remote_runtime_outputs") == [("a\ufffdb",)]


def test_an_escaped_nul_in_an_agent_line_reaches_the_transcript_as_a_replacement(client):
    sid = create_session(client)
    response = post_lines(client, sid, [cl.assistant(cl.text("x\x00y")), cl.result()])
    assert response.status_code == 200, response.get_json()
    assert [m["content"] for m in get_session(client, sid)["messages"]] == ["x\ufffdy"]


@pytest.mark.parametrize("suffix", ["", "/messages", "/export", "/stream"])
def test_a_session_id_holding_nul_is_an_unknown_session_on_reads(client, suffix):
    response = client.get(f"{SESSIONS}/a%00b{suffix}")
    assert error_of(response, 404)["code"] == "session_not_found"


@pytest.mark.parametrize("name, body", [("output", {"chunks": [{"data": "x"}]}),
                                        ("complete", {}), ("usage", {"report_id": "r"})])
def test_a_session_id_holding_nul_is_an_unknown_session_on_writes(client, name, body):
    response = client.post(f"{SESSIONS}/a%00b/{name}", json=body)
    assert error_of(response, 404)["code"] == "session_not_found"


def test_a_stream_client_id_holding_nul_is_422(client):
    sid = create_session(client)
    response = client.get(f"{SESSIONS}/{sid}/stream?client_id=a%00b")
    assert error_of(response, 422)["code"] == "invalid_client_id"
