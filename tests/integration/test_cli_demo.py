"""`flask demo`: the README's first command ingests the bundled sample and prints it."""
import json

import pytest


def test_demo_ingests_the_bundled_sample_and_prints_its_transcript(runner, rows):
    result = runner.invoke(args=["demo"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[:result.output.index("\ningested")])
    session = payload["session"]
    assert [m["role"] for m in session["messages"]] == ["system", "assistant", "assistant"]
    assert session["messages"][2]["content"] == "The README has a single heading: **demo**."
    assert session["status"] == "completed"
    assert session["message_count"] == 3 and session["conversation_turn_count"] == 3
    stored = rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?",
                  session["session_id"])
    assert stored == [(14,)]
    assert f"/sessions/{session['session_id']}" in result.output
    assert "authentication is off" in result.output


class TestWithAuthentication:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False}

    def test_demo_prints_a_user_token_that_reads_its_session(self, runner, client):
        result = runner.invoke(args=["demo", "--user", "dana"])
        assert result.exit_code == 0, result.output
        session = json.loads(result.output[:result.output.index("\ningested")])["session"]
        assert session["user_id"] == "dana" and session["machine"] == "demo"
        secret = result.output.rsplit(": ", 1)[1].strip()
        assert secret.startswith("tlu_")
        response = client.get(f"/api/remote/sessions/{session['session_id']}",
                              headers={"Authorization": f"Bearer {secret}"})
        assert response.status_code == 200
        assert response.get_json()["session"]["messages"] == session["messages"]
