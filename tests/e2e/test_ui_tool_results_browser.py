"""Tool output in the viewer, in headless Chromium against real gunicorn (issue 32): each
tool result under its call, a tool-only turn as a compact block between the bubbles,
collapsed results with their first and last lines, failures open, live as closed; in
light and dark, at 390 px. The browser set-up is test_ui_browser.py's."""
from pathlib import Path

import pytest

from tests import claude_lines as cl
from tests.e2e.test_ui_browser import WAIT_MS
from tests.e2e.test_ui_browser import Runner
from tests.e2e.test_ui_browser import app_server  # noqa: F401  (a fixture)
from tests.e2e.test_ui_browser import browser  # noqa: F401  (a fixture)
from tests.e2e.test_ui_browser import new_session
from tests.e2e.test_ui_browser import open_page  # noqa: F401  (a fixture)
from tests.e2e.test_ui_browser import wait_for_state

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "app" / "samples" / "claude_session.jsonl"
SHELL_FAIL = ROOT / "tests" / "fixtures" / "captures" / "claude-2.1.328" / "shell_fail.jsonl"


def finished(base, path, session_type="agent"):
    """A completed session that received the capture at `path`."""
    sid = new_session(base, session_type)
    runner = Runner(base, sid)
    runner.post(*[line for line in path.read_text(encoding="utf-8").splitlines() if line])
    runner.complete()
    return sid


def transcript_order(page):
    """What the transcript shows, in order: ("bubble", role) or ("tools", tool names)."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '#transcript > article.bubble, #transcript > article.tool-turn')].map((node) =>
        node.classList.contains('tool-turn')
          ? ['tools', [...node.querySelectorAll('.tool-name')].map((n) => n.textContent)]
          : ['bubble', node.querySelector('.role').textContent])""")


def test_a_finished_session_shows_each_tool_result_under_its_call(
        open_page, app_server, tmp_path):  # noqa: F811
    sid = finished(app_server.base, SAMPLE)
    page = open_page(f"{app_server.base}/sessions/{sid}")
    # the demo: a note, a text turn that ran Bash, the tool-only Read turn, a text turn
    assert transcript_order(page) == [["bubble", "system"], ["bubble", "assistant"],
                                      ["tools", ["Read"]], ["bubble", "assistant"]]
    bash = page.locator("article.bubble .tool-call").filter(has_text="Bash")
    result = bash.locator("> details.tool-result")
    assert result.count() == 1
    assert result.evaluate("d => d.open") is False  # collapsed, with its ends shown
    assert result.locator(".result-head").inner_text() == "README.md"
    assert result.locator(".result-tail").inner_text() == "app"
    result.locator("summary").click()
    assert result.locator("pre.output").inner_text() == "README.md\nsetup.cfg\napp\n"

    block = page.locator("article.tool-turn")
    assert block.locator(".tool-use summary").inner_text().split() == ["TOOL", "Read", "README.md"]
    read = block.locator(".tool-call > details.tool-result")
    assert read.locator(".result-head").inner_text() == "# demo"
    read.locator("summary").click()
    assert read.locator("pre.output").inner_text() == "# demo\n"
    page.screenshot(path=tmp_path / "tool-results.png", full_page=True)


def test_a_failed_result_starts_open_and_a_successful_one_collapsed(
        open_page, app_server):  # noqa: F811
    sid = finished(app_server.base, SHELL_FAIL)
    page = open_page(f"{app_server.base}/sessions/{sid}")
    failed = page.locator("article.bubble .tool-call > details.tool-result.is-error")
    assert failed.count() == 1 and failed.evaluate("d => d.open") is True
    assert "cannot access" in failed.locator("pre.output").inner_text()


def test_a_live_tool_only_turn_becomes_its_block_without_reload_and_looks_the_same(
        open_page, app_server):  # noqa: F811
    sid = new_session(app_server.base, "agent")
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text("Looking.")), cl.result())
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    page.evaluate("window.sameDocument = true")
    runner.post(cl.assistant(cl.tool_use("toolu_ok", "Read", {"file_path": "README.md"}),
                             message_id="msg_2"),
                cl.tool_result("toolu_ok", "# demo\nline two\n"),
                cl.assistant(cl.tool_use("toolu_bad", "Bash", {"command": "false"}),
                             message_id="msg_3"),
                cl.tool_result("toolu_bad", "Exit code 1\nno good", is_error=True))
    live = page.locator("#open-turn")
    live.locator("details.tool-result.is-error").wait_for()
    live_states = live.locator("details.tool-result").evaluate_all("ds => ds.map(d => d.open)")
    assert live_states == [False, True]  # the live bubble: collapsed, the failure open
    assert live.locator(".result-tail").first.inner_text() == "line two"

    runner.post(cl.result())
    page.locator("article.tool-turn").wait_for()
    page.locator("#open-turn").wait_for(state="detached")
    closed = page.locator("article.tool-turn details.tool-result")
    assert closed.evaluate_all("ds => ds.map(d => d.open)") == live_states  # the same when closed
    assert transcript_order(page) == [["bubble", "assistant"], ["tools", ["Read", "Bash"]]]
    assert page.evaluate("window.sameDocument") is True
    runner.post(cl.assistant(cl.text("Done."), message_id="msg_4"), cl.result())
    page.locator("article.bubble >> text=Done.").wait_for()
    assert transcript_order(page) == [["bubble", "assistant"], ["tools", ["Read", "Bash"]],
                                      ["bubble", "assistant"]]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_tool_only_block_fits_390_px_in_either_theme(browser, app_server, theme):  # noqa: F811
    sid = new_session(app_server.base, "agent")
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text("Before.")), cl.result(),
                cl.assistant(cl.tool_use("toolu_w", "Read", {"file_path": "/" + "/".join(["deep"] * 60)}),
                             message_id="msg_2"),
                cl.tool_result("toolu_w", "w" * 3000 + "\n" + "last " * 100), cl.result())
    runner.complete()
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=theme)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{app_server.base}/sessions/{sid}")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        block = page.locator("article.tool-turn .tool-use")
        background = block.evaluate("n => getComputedStyle(n).backgroundColor")
        assert (background == "rgb(32, 38, 51)") is (theme == "dark")  # --panel-2
    finally:
        context.close()
