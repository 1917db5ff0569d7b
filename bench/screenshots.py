"""The viewer's screenshots in docs/screenshots/, taken with headless Chromium.

    .venv/bin/python bench/screenshots.py [--out docs/screenshots]

Serves a fresh database with gunicorn (as tests/e2e does), posts one demo session
(an init line, text with a long code line and a long URL, a tool call with its
result, a failing call, thinking), a second one still in its first turn, and a third
driven live (a runner attached, a prompt answered, a prompt queued, a pending
permission), then shoots the session page, the live-driven one and the session
list at 390 and 1280 px wide, in the light and the dark theme (`prefers-color-scheme`):

    session-390-light.png  session-390-dark.png  session-1280-light.png  ...
    control-390-light.png ...
    sessions-390-light.png ...

It prints each page's scroll width against the viewport and exits 1 if any page
scrolls sideways. Needs Debian's chromium and the playwright package (the `e2e`
test dependencies); Playwright's own browser download is never used.
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/servers.py and tests/claude_lines.py

from playwright.sync_api import sync_playwright  # noqa: E402

from tests import claude_lines as cl  # noqa: E402
from tests import servers  # noqa: E402
from tests.e2e.test_ui_browser import CHROMIUM_ARGS  # noqa: E402
from tests.e2e.test_ui_browser import chromium_binary  # noqa: E402

WIDTHS = (390, 1280)
THEMES = ("light", "dark")
LONG_URL = "https://example.com/" + "/".join(f"segment-{n}" for n in range(12)) + "?q=1"
ANSWER = (
    "The pager drops the last page when the total is a multiple of the page size.\n\n"
    "```python\n"
    "def pages(total, size):\n"
    "    return [range(start, min(start + size, total)) for start in range(0, total, size)]"
    "  # one range per page, the last one short\n"
    "```\n\n"
    f"Upstream notes: {LONG_URL}"
)


def demo_lines():
    """A finished turn that uses every kind of block the viewer shows."""
    read = {"file_path": "/workspace/demo/src/pager.py", "offset": 0, "limit": 2000,
            "reason": "find where the last page is computed " * 3}
    return [
        cl.system_init(),
        cl.assistant(cl.thinking("The test says 3 pages for 30 items; let me read the pager."),
                     message_id="m1"),
        cl.assistant(cl.text("Let me look at the pager first."), message_id="m1"),
        cl.assistant(cl.tool_use("toolu_1", "Read", read), message_id="m1"),
        cl.tool_result("toolu_1", "1  def pages(total, size):\n2      return [range(s, s + size)"
                                  " for s in range(0, total - size, size)]\n"),
        cl.assistant(cl.tool_use("toolu_2", "Bash", {"command": "pytest -q tests/test_pager.py"}),
                     message_id="m2"),
        cl.tool_result("toolu_2", "F\nE   assert 2 == 3\n1 failed in 0.02s", is_error=True),
        cl.assistant(cl.text(ANSWER), message_id="m3"),
        cl.result(),
    ]


def post(base, sid, lines):
    chunks = [{"seq": n, "data": line} for n, line in enumerate(lines)]
    status, body = servers.call(base, "POST", f"/api/remote/sessions/{sid}/output",
                                {"chunks": chunks})
    assert status == 200, body


def new_session(base, context):
    status, body = servers.call(base, "POST", "/api/remote/sessions",
                                {"session_type": "workflow", "context": context})
    assert status == 201, body
    return body["session"]["session_id"]


def driven_session(base):
    """An interactive session as a runner keeps it: attached, one prompt answered (its
    echo a user row), one queued, and the agent asking to run a command."""
    status, body = servers.call(base, "POST", "/api/remote/sessions",
                                {"session_type": "agent", "context": {}})
    assert status == 201, body
    sid = body["session"]["session_id"]
    path = f"/api/remote/sessions/{sid}"
    servers.call(base, "POST", f"{path}/runner",
                 {"controls": ["send", "permissions", "interrupt", "stop"]})
    status, body = servers.call(base, "POST", f"{path}/messages",
                                {"content": "Run the pager tests and fix what fails.",
                                 "client_message_id": "demo-1"})
    assert status == 202, body
    commands = servers.call(base, "GET", f"{path}/commands?after=0")[1]["commands"]
    echo = json.dumps({"type": "user", "isReplay": True, "uuid": commands[0]["uuid"],
                       "message": {"role": "user", "content": commands[0]["content"]}})
    ask = json.dumps({"type": "control_request", "request_id": "demo-request", "request": {
        "subtype": "can_use_tool", "tool_name": "Bash",
        "input": {"command": "pytest -q tests/test_pager.py", "description": "run the tests"}}})
    post(base, sid, [cl.system_init(), echo,
                     cl.assistant(cl.text("I will run the pager's tests first."), message_id="m1"),
                     cl.assistant(cl.tool_use("toolu_9", "Bash",
                                              {"command": "pytest -q tests/test_pager.py"}),
                                  message_id="m1"),
                     ask])
    servers.call(base, "POST", f"{path}/messages",
                 {"content": "And keep the old behaviour for empty lists.",
                  "client_message_id": "demo-2"})
    return sid


def shoot(browser, url, path, width, theme, at_end=False):
    """Screenshot `url` at `width` in `theme` (whole, or with `at_end` the viewport
    scrolled to the end, where the controls are); returns the page's scroll width."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  color_scheme=theme, device_scale_factor=1)
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_timeout(700)  # a live page's stream connects, its indicator settles
        if at_end:
            page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        page.screenshot(path=path, full_page=not at_end)
        return page.evaluate("document.documentElement.scrollWidth")
    finally:
        context.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    wide = []
    with tempfile.TemporaryDirectory() as tmp, servers.gunicorn(tmp) as app:
        sid = new_session(app.base, {"workflow_id": "wf-demo", "prompt": "Fix the pager's last page"})
        post(app.base, sid, demo_lines())
        servers.call(app.base, "POST", f"/api/remote/sessions/{sid}/complete", {"exit_code": 0})
        live = new_session(app.base, {"workflow_id": "wf-demo"})
        post(app.base, live, [cl.system_init(), cl.assistant(cl.text("Reading the failing test."))])
        driven = driven_session(app.base)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_binary(),
                                                 args=CHROMIUM_ARGS)
            for name, path in (("session", f"/sessions/{sid}"), ("control", f"/sessions/{driven}"),
                               ("sessions", "/sessions")):
                for width in WIDTHS:
                    for theme in THEMES:
                        target = args.out / f"{name}-{width}-{theme}.png"
                        scroll = shoot(browser, app.base + path, target, width, theme,
                                       at_end=name == "control")
                        print(f"{target.name}: scrollWidth {scroll} (viewport {width})")
                        if scroll > width:
                            wide.append(target.name)
            browser.close()
    if wide:
        print("scrolls sideways:", ", ".join(wide))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
