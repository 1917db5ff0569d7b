"""`flask demo`: the README's first command ingests a bundled sample and says where to read it."""
import json

import pytest

from app.providers import PROVIDERS

BUNDLED_LINES = 14  # app/samples/claude_session.jsonl


def test_demo_prints_a_short_summary_with_the_urls_of_its_session(runner, rows):
    result = runner.invoke(args=["demo"])
    assert result.exit_code == 0, result.output
    (session_id, status, messages), = rows("SELECT session_id, status, message_count"
                                           " FROM agent_sessions")
    assert (status, messages) == ("completed", 3)
    lines = result.output.splitlines()
    assert len(lines) <= 6
    assert lines[0] == f"ingested {BUNDLED_LINES} claude lines into session {session_id}: 3 messages, completed"
    assert f"API:    http://127.0.0.1:8000/api/remote/sessions/{session_id}" in result.output
    assert f"viewer: http://127.0.0.1:8000/sessions/{session_id}" in result.output
    assert "authentication is off" in result.output
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?",
                session_id) == [(BUNDLED_LINES,)]


@pytest.mark.parametrize("bind, base", [
    ("0.0.0.0:9000", "http://127.0.0.1:9000"),
    ("turnlog.internal:80", "http://turnlog.internal:80"),
])
def test_the_urls_follow_the_configured_bind(runner, monkeypatch, bind, base):
    monkeypatch.setenv("GUNICORN_BIND", bind)
    result = runner.invoke(args=["demo"])
    assert result.exit_code == 0, result.output
    assert f"API:    {base}/api/remote/sessions/" in result.output


def test_a_unix_socket_bind_prints_paths_and_says_why(runner, monkeypatch):
    monkeypatch.setenv("GUNICORN_BIND", "unix:/run/turnlog.sock")
    result = runner.invoke(args=["demo"])
    assert result.exit_code == 0, result.output
    assert "API:    /api/remote/sessions/" in result.output
    assert "(paths on unix:/run/turnlog.sock: GUNICORN_BIND is no TCP address" in result.output


def test_demo_json_prints_the_whole_session(runner):
    result = runner.invoke(args=["demo", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    session = payload["session"]
    assert [m["role"] for m in session["messages"]] == ["system", "assistant", "assistant"]
    assert session["messages"][2]["content"] == "The README has a single heading: **demo**."
    assert session["status"] == "completed"
    assert session["message_count"] == 3 and session["conversation_turn_count"] == 3
    assert payload["api_url"] == f"http://127.0.0.1:8000/api/remote/sessions/{session['session_id']}"
    assert payload["viewer_url"] == f"http://127.0.0.1:8000/sessions/{session['session_id']}"
    assert payload["user_token"] is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_has_a_bundled_sample_that_makes_a_transcript(runner, rows, provider):
    result = runner.invoke(args=["demo", "--provider", provider, "--session-type", "chat"])
    assert result.exit_code == 0, result.output
    (stored_provider, session_type, messages), = rows(
        "SELECT provider, session_type, message_count FROM agent_sessions")
    assert (stored_provider, session_type) == (provider, "chat")
    assert messages >= 2
    assert f" {provider} lines into session " in result.output


@pytest.mark.parametrize("args, error", [
    (["--session-type", "bogus"], "Invalid value for '--session-type': 'bogus' is not one of"),
    (["--provider", "llama"], "Invalid value for '--provider': 'llama' is not one of"),
    (["--no-such-option"], "No such option '--no-such-option'"),
])
def test_a_bad_option_is_one_line_and_writes_nothing(runner, rows, args, error):
    result = runner.invoke(args=["demo", *args])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
    assert error in result.output and "--help" in result.output
    assert "Traceback" not in result.output and result.exception.__class__ is SystemExit
    assert rows("SELECT COUNT(*) FROM agent_sessions") == [(0,)]


def test_a_blank_owner_is_refused_before_anything_is_written(runner, app):
    result = runner.invoke(args=["demo", "--user", "  "])
    assert result.exit_code == 1
    assert result.output == ("Error: the user must be 1 to 200 characters of text"
                             " (no NUL, no lone surrogate)\n")


@pytest.mark.parametrize("content, error", [
    (b"\xff\xfe not text", "is not UTF-8 text"),
    (b"", "holds no lines to ingest"),
])
def test_a_sample_that_cannot_be_ingested_is_one_line(runner, rows, tmp_path, content, error):
    sample = tmp_path / "sample.jsonl"
    sample.write_bytes(content)
    result = runner.invoke(args=["demo", "--sample", str(sample)])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and error in result.output
    assert rows("SELECT COUNT(*) FROM agent_sessions") == [(0,)]


class TestWithAuthentication:
    @pytest.fixture
    def app_config(self, tmp_path):
        return {"AUTH_DISABLED": False, "DEMO_TOKENS_FILE": str(tmp_path / "demo-tokens.json")}

    def test_demo_again_prints_the_token_it_printed_before(self, runner, app, rows, tmp_path):
        first = json.loads(runner.invoke(args=["demo", "--json"]).output)["user_token"]
        again = json.loads(runner.invoke(args=["demo", "--json"]).output)["user_token"]
        assert again == first
        assert rows("SELECT COUNT(*) FROM agent_tokens WHERE kind = 'user'") == [(1,)]
        assert (tmp_path / "demo-tokens.json").stat().st_mode & 0o777 == 0o600
        other = json.loads(runner.invoke(args=["demo", "--json", "--user", "erin"]).output)
        assert other["user_token"] != first  # a token per owner

    def test_a_revoked_demo_token_is_replaced(self, runner, rows):
        first = json.loads(runner.invoke(args=["demo", "--json"]).output)["user_token"]
        rows("UPDATE agent_tokens SET revoked_at = '2026-01-01T00:00:00.000000Z'")
        again = json.loads(runner.invoke(args=["demo", "--json"]).output)["user_token"]
        assert again != first and again.startswith("tlu_")

    def test_demo_prints_a_user_token_that_reads_its_session(self, runner, client, rows):
        result = runner.invoke(args=["demo", "--user", "dana"])
        assert result.exit_code == 0, result.output
        (session_id, user_id, machine), = rows("SELECT session_id, user_id, machine"
                                               " FROM agent_sessions")
        assert (user_id, machine) == ("dana", "demo")
        token_line, = [line for line in result.output.splitlines() if "token:" in line]
        secret = token_line.split()[-1]
        assert secret.startswith("tlu_")
        response = client.get(f"/api/remote/sessions/{session_id}",
                              headers={"Authorization": f"Bearer {secret}"})
        assert response.status_code == 200
        assert response.get_json()["session"]["message_count"] == 3

    def test_demo_json_carries_the_token(self, runner, client):
        payload = json.loads(runner.invoke(args=["demo", "--json"]).output)
        response = client.get(payload["api_url"].removeprefix("http://127.0.0.1:8000"),
                              headers={"Authorization": f"Bearer {payload['user_token']}"})
        assert response.get_json()["session"]["messages"] == payload["session"]["messages"]
