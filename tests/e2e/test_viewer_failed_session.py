"""The viewer in headless Chromium: a failed session says why (exit code, its last stderr
lines), and a session whose runner went silent reads `stale`, without the live dot.
Chromium and Playwright as tests/e2e/test_ui_browser.py gets them."""
import pytest

from tests import servers
from tests.e2e.test_ui_browser import browser  # noqa: F401  (a fixture)
from tests.e2e.test_ui_browser import open_page  # noqa: F401  (a fixture)
from tests.servers import call

STDERR = ["Traceback (most recent call last):", '  File "agent.py", line 3', "KeyError: 'ANTHROPIC_API_KEY'"]


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    env = {"TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5", "TURNLOG_RUNNER_STALE_SECONDS": "1"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui-failed"), env=env, workers=1,
                          threads=8) as app:
        yield app


def open_run(base, command, prompt=None):
    status, body = call(base, "POST", "/api/remote/sessions",
                        {"session_type": "agent", "command": command, "prompt": prompt})
    assert status == 201, body
    return body["session"]["session_id"]


def connection(page, state):
    """Wait until the connection indicator reads `state`."""
    page.locator(f"#connection[data-state='{state}']").wait_for()


def post(base, sid, chunks):
    status, body = call(base, "POST", f"/api/remote/sessions/{sid}/output", {"chunks": chunks})
    assert status == 200, body


def test_a_failed_session_page_shows_its_exit_code_and_last_stderr_lines(open_page, app_server):  # noqa: F811
    base = app_server.base
    sid = open_run(base, ["claude", "-p", "fix the pager", "--api-key", "sk-ant-" + "k" * 30],
                   "fix the pager")
    post(base, sid, [{"seq": n, "stream": "stderr", "data": line} for n, line in enumerate(STDERR)])
    status, _ = call(base, "POST", f"/api/remote/sessions/{sid}/complete", {"exit_code": 3})
    assert status == 200

    page = open_page(f"{base}/sessions/{sid}")
    failure = page.locator("#failure")
    failure.wait_for()
    assert failure.locator(".failure-code").inner_text() == "3"
    assert failure.locator(".failure-stderr").inner_text().splitlines() == STDERR
    assert page.locator("#session-status").inner_text() == "failed"
    assert page.locator("h1.session-title").inner_text() == "fix the pager"
    command = page.locator(".command-line").inner_text()
    assert "--api-key [redacted]" in command and "sk-ant-" not in command
    assert page.locator("#connection").get_attribute("data-state") == "ended"

    page.goto(f"{base}/sessions")
    row = page.locator("tr", has=page.locator(f"a[href='/sessions/{sid}']"))
    assert row.locator(".badge").inner_text() == "failed"
    assert row.locator(".badge").get_attribute("title") == "exit code 3"


def test_a_session_whose_runner_went_silent_reads_stale_not_live(open_page, app_server):  # noqa: F811
    base = app_server.base
    sid = open_run(base, ["python3", "nightly.py"])
    page = open_page(f"{base}/sessions/{sid}")
    connection(page, "live")

    # silent past RUNNER_STALE_SECONDS: a reload reads stale, connected but with no live dot
    page.wait_for_timeout(1500)
    page.reload()
    connection(page, "stale")
    assert page.locator("#session-status").inner_text() == "stale"
    assert page.locator("h1.session-title").inner_text() == "python3 nightly.py"

    # a line from its runner makes it running again, without a reload
    post(base, sid, [{"seq": 0, "data": '{"type":"assistant","message":{"id":"m1","role":"assistant",'
                                        '"content":[{"type":"text","text":"back"}]}}'},
                     {"seq": 1, "data": '{"type":"result","subtype":"success","result":"back"}'}])
    connection(page, "live")
    assert page.locator("#session-status").inner_text() == "running"

    page.goto(f"{base}/sessions")
    page.wait_for_timeout(1200)
    page.reload()
    row = page.locator("tr", has=page.locator(f"a[href='/sessions/{sid}']"))
    assert row.locator(".badge").inner_text() == "stale"


def test_a_failing_session_shows_why_on_its_open_page(open_page, app_server):  # noqa: F811
    base = app_server.base
    sid = open_run(base, ["gemini", "-p", "summarise"], "summarise")
    page = open_page(f"{base}/sessions/{sid}")
    connection(page, "live")
    assert page.locator("#failure").count() == 0

    post(base, sid, [{"seq": 0, "stream": "stderr", "data": "Error: quota exhausted"}])
    status, _ = call(base, "POST", f"/api/remote/sessions/{sid}/complete", {"exit_code": 41})
    assert status == 200
    page.locator("#failure .failure-code").wait_for()
    assert page.locator("#failure .failure-code").inner_text() == "41"
    assert page.locator("#failure .failure-stderr").inner_text() == "Error: quota exhausted"
    connection(page, "ended")
