"""Issue 29's attacks over HTTP: agent text built to freeze a parser is ingested,
summarised and shown at once.

Before, the tool result below held SQLite's write lock for 28.8 s (the test-summary
patterns were quadratic on its newlines, inside the ingest transaction), and the
backtick message killed a worker on each page view. The bounds here are loose;
bench/hostile_text.py has the figures.
"""
import time

from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines

SESSIONS = "/api/remote/sessions"
ATTACK_RESULT = "1 passed in 0.2s\n" + 60000 * "\n"  # 118 KiB
LOOSE_SECONDS = 2.0


def test_a_result_of_60000_newlines_ingests_at_once_with_its_test_summary(client):
    sid = create_session(client)
    lines = [cl.assistant(cl.text("Running the tests."),
                          cl.tool_use("toolu_1", "Bash", {"command": "pytest -q"})),
             cl.tool_result("toolu_1", ATTACK_RESULT), cl.result()]
    began = time.perf_counter()
    response = post_lines(client, sid, lines)
    assert time.perf_counter() - began < LOOSE_SECONDS
    assert response.status_code == 200, response.get_json()
    [item] = client.get(f"{SESSIONS}/{sid}/evidence").get_json()["evidence"]
    assert item["test_summary"] == {"framework": "pytest", "passed": 1, "failed": 0,
                                    "skipped": 0, "errors": 0}


def test_a_16_kb_backtick_message_is_shown_at_once(client):
    sid = create_session(client)
    message = "a" + "`" * 16000 + "a"
    post_lines(client, sid, [cl.assistant(cl.text(message)), cl.result()])
    complete(client, sid)
    for path in (f"/sessions/{sid}", f"/sessions/{sid}/bubbles"):
        began = time.perf_counter()
        response = client.get(path)
        assert time.perf_counter() - began < LOOSE_SECONDS
        assert response.status_code == 200
        assert message in response.get_data(as_text=True)
