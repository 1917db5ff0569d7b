"""`flask demo`: the README's first command ingests the bundled sample and prints it."""
import json


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
