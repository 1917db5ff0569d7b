"""What a reader of the session page sees in Chromium (issue 32): the header following a
live session, the open bubble's Markdown, one token figure, readable dark-mode search
controls, Codex reasoning without its Markdown marks, the evidence summary after a
fail-then-fix. Chromium and the server as
tests/e2e/test_ui_browser.py starts them (its fixtures)."""
import json
import re

import pytest

from tests import claude_lines as cl
from tests import codex_lines as codex
from tests.e2e.test_ui_browser import SCRIPT
from tests.e2e.test_ui_browser import WAIT_MS
from tests.e2e.test_ui_browser import Runner
from tests.e2e.test_ui_browser import app_server  # noqa: F401 (a fixture)
from tests.e2e.test_ui_browser import browser  # noqa: F401 (a fixture)
from tests.e2e.test_ui_browser import new_session
from tests.e2e.test_ui_browser import open_page  # noqa: F401 (a fixture)
from tests.e2e.test_ui_browser import stream_event
from tests.e2e.test_ui_browser import text_delta
from tests.e2e.test_ui_browser import wait_for_state
from tests.servers import call


def costing(line, cost_usd):
    """A result line that reports its cost, as Claude's do."""
    return json.dumps({**json.loads(line), "total_cost_usd": cost_usd})


def text_of(page, selector):
    return page.locator(selector).inner_text()


def live_page(opener, server):
    """A new agent session, its runner, and its page (`opener`, the open_page fixture)
    once it follows the session live."""
    sid = new_session(server.base, "agent")
    runner = Runner(server.base, sid)
    page = opener(f"{server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    return sid, runner, page


def test_a_live_sessions_heading_counters_and_updated_follow_without_reload(open_page,  # noqa: F811
                                                                           app_server):  # noqa: F811
    sid, runner, page = live_page(open_page, app_server)
    page.evaluate("window.notReloaded = true")
    assert text_of(page, "#session-title") == sid  # it has said nothing yet
    assert page.locator("#session-meta .model").count() == 0
    updated = page.locator("#updated-at").get_attribute("datetime")

    runner.post(cl.system_init(), cl.assistant(cl.text("Fixing the **pager** now.")))
    page.wait_for_selector("#session-meta code.model >> text=claude-sonnet-4-5")
    assert text_of(page, "#session-meta code.cwd") == "/repo"
    page.wait_for_function(f"document.getElementById('updated-at').dateTime !== {json.dumps(updated)}")
    assert text_of(page, "#updated-at").endswith(" UTC")

    runner.post(cl.result())  # the turn closes: its row titles the session
    page.wait_for_selector("#session-title >> text=Fixing the pager now.")
    assert "untitled" not in page.locator("#session-title").get_attribute("class")
    assert text_of(page, "#session-meta code.session-id") == sid
    page.wait_for_function("document.title === 'Fixing the pager now. · turnlog'")
    assert text_of(page, "#count-messages") == "2" and text_of(page, "#count-turns") == "1"
    assert text_of(page, "#count-tokens") == "10"  # the turn's own: 3 in, 7 out
    assert text_of(page, "#count-cost") == "n/a"  # cl.result() reports no cost

    status, body = call(app_server.base, "POST", f"/api/remote/sessions/{sid}/usage",
                        {"report_id": "r1", "input_tokens": 1000, "output_tokens": 234,
                         "requests": 1})
    assert status == 200, body
    runner.post(cl.assistant(cl.text("More.")), costing(cl.result(), 0.25))
    page.wait_for_selector('#count-tokens >> text="1234"')  # the usage reports' count now
    assert "usage reports" in page.locator("#tokens-fact").get_attribute("title")
    page.wait_for_selector('#count-cost >> text="$0.2500"')
    page.wait_for_selector('#count-turns >> text="2"')
    assert page.evaluate("window.notReloaded") is True


def test_the_open_bubble_shows_rendered_markdown_as_its_row_will(open_page, app_server):  # noqa: F811
    sid, runner, page = live_page(open_page, app_server)
    runner.post(stream_event({"type": "message_start", "message": {
                    "id": "msg_s", "role": "assistant", "content": []}}),
                stream_event({"type": "content_block_start", "index": 0,
                              "content_block": {"type": "text", "text": ""}}),
                text_delta("## Plan\n\nRun **the"))
    page.wait_for_selector("#open-turn .markdown h2 >> text=Plan")
    runner.post(text_delta(" tests** with `pytest`:\n\n- unit\n- e2e "), text_delta(SCRIPT))
    page.wait_for_selector("#open-turn .markdown.streaming strong >> text=the tests")
    page.wait_for_selector("#open-turn .markdown li >> text=e2e")
    assert text_of(page, "#open-turn .markdown code") == "pytest"
    assert "**" not in text_of(page, "#open-turn .markdown")
    page.wait_for_function("document.querySelector('#open-turn .markdown').textContent"
                           ".includes('window.pwned')")  # the script is text, escaped
    assert page.evaluate("window.pwned") is None
    assert page.locator("#open-turn .markdown script, #open-turn .markdown img").count() == 0

    whole = f"## Plan\n\nRun **the tests** with `pytest`:\n\n- unit\n- e2e {SCRIPT}"
    runner.post(stream_event({"type": "content_block_stop", "index": 0}),
                cl.assistant(cl.text(whole), message_id="msg_s"))
    page.wait_for_selector("#open-turn .markdown:not(.streaming):not(.raw)")
    live = page.inner_html("#open-turn .markdown")
    runner.post(cl.result())
    page.wait_for_selector("#open-turn", state="detached")
    assert page.inner_html("article.bubble .markdown") == live  # the same renderer, the same HTML
    assert page.evaluate("window.pwned") is None

    page.reload()  # mid-turn, the server's first render of the open turn is rendered too
    runner.post(cl.assistant(cl.text("Next: *lint*."), message_id="msg_t"))
    page.wait_for_selector("#open-turn .markdown em >> text=lint")


def test_the_list_and_the_page_show_the_same_token_figure(open_page, app_server):  # noqa: F811
    demo = new_session(app_server.base, "agent")  # no usage report, as in the demo
    Runner(app_server.base, demo).post(cl.assistant(cl.text("Demo turn.")), cl.result())
    reported = new_session(app_server.base, "agent")
    Runner(app_server.base, reported).post(cl.assistant(cl.text("Reported turn.")), cl.result())
    status, body = call(app_server.base, "POST", f"/api/remote/sessions/{reported}/usage",
                        {"report_id": "r1", "input_tokens": 40, "output_tokens": 2, "requests": 1})
    assert status == 200, body

    listing = open_page(f"{app_server.base}/sessions")
    for sid, expected in ((demo, "10"), (reported, "42")):
        row = listing.locator("table.sessions tr", has=listing.locator(f'a[href="/sessions/{sid}"]'))
        in_list = row.locator('td[data-label="tokens"]')
        page = open_page(f"{app_server.base}/sessions/{sid}")
        assert in_list.inner_text() == text_of(page, "#count-tokens") == expected
        assert in_list.get_attribute("title") == page.locator("#tokens-fact").get_attribute("title")
        labels = page.locator(".facts dt").all_inner_texts()
        assert [label.lower() for label in labels if "token" in label.lower()] == ["tokens"]


def _luminance(rgb):
    def channel(value):
        value /= 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4
    red, green, blue = (channel(v) for v in rgb)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(first, second):
    lighter, darker = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def rgb(css):
    return tuple(int(part) for part in re.findall(r"\d+", css)[:3])


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_search_controls_are_readable_in_either_theme(browser, app_server, theme):  # noqa: F811
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=theme)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{app_server.base}/search?q=anything")
        page_bg = rgb(page.evaluate("getComputedStyle(document.body).backgroundColor"))
        for selector in (".search input", ".search button"):
            style = page.eval_on_selector(selector, "n => { const s = getComputedStyle(n);"
                                                    " return [s.color, s.backgroundColor,"
                                                    " s.borderTopColor]; }")
            ink, background, border = (rgb(value) for value in style)
            assert contrast(ink, background) >= 4.5, (selector, style)
            assert contrast(border, page_bg) > 1.1 or contrast(background, page_bg) > 1.1, selector
        placeholder = rgb(page.eval_on_selector(
            ".search input", "n => getComputedStyle(n, '::placeholder').color"))
        field = rgb(page.eval_on_selector(".search input", "n => getComputedStyle(n).backgroundColor"))
        assert contrast(placeholder, field) >= 4.5
        if theme == "dark":  # the dark page's own colours, not the browser's light defaults
            assert _luminance(field) < 0.05 and _luminance(page_bg) < 0.05
    finally:
        context.close()


def test_codex_reasoning_shows_its_heading_as_a_title_without_asterisks(open_page, app_server):  # noqa: F811
    status, body = call(app_server.base, "POST", "/api/remote/sessions",
                        {"session_type": "agent", "provider": "codex", "context": {}})
    assert status == 201, body
    sid = body["session"]["session_id"]
    runner = Runner(app_server.base, sid)
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    runner.post(codex.thread_started(), codex.turn_started(),
                codex.item("completed", "item_0", "reasoning",
                           text="**Running the Rust tests**\n\nFirst `cargo test`, then **fix**."))
    live = page.locator("#open-turn details.thinking")
    page.wait_for_selector("#open-turn details.thinking .thinking-title >> text=Running the Rust tests")
    live.locator("summary").click()
    page.wait_for_selector("#open-turn .thinking-text strong >> text=fix")
    assert "**" not in live.inner_text()

    runner.post(codex.message("item_1", "Done."), codex.turn_completed())
    page.wait_for_selector("#open-turn", state="detached")
    closed = page.locator("article.bubble details.thinking")
    assert closed.locator(".label").inner_text().lower() == "reasoning"
    assert closed.locator(".thinking-title").inner_text() == "Running the Rust tests"
    closed.locator("summary").click()
    assert closed.locator(".thinking-text code").inner_text() == "cargo test"
    assert "**" not in closed.inner_text()


PYTEST = {"command": "python -m pytest -q"}


def test_the_evidence_summary_after_fail_then_fix_reads_the_latest_run(open_page,  # noqa: F811
                                                                      app_server):  # noqa: F811
    sid, runner, page = live_page(open_page, app_server)
    runner.post(cl.system_init(),
                cl.assistant(cl.tool_use("toolu_t1", "Bash", PYTEST), message_id="msg_1"),
                cl.tool_result("toolu_t1", "F.....\nFAILED tests/test_pager.py::test_last_page\n"
                                           "Exit code 1\n1 failed, 46 passed in 0.52s", True),
                cl.assistant(cl.tool_use("toolu_e1", "Edit", {
                    "file_path": "/repo/app/pager.py", "old_string": "n - 1", "new_string": "n"}),
                    message_id="msg_2"),
                cl.tool_result("toolu_e1", "The file /repo/app/pager.py has been updated."),
                cl.assistant(cl.tool_use("toolu_t2", "Bash", PYTEST), message_id="msg_3"),
                cl.tool_result("toolu_t2", "...............................................\n"
                                           "47 passed in 0.50s"),
                cl.assistant(cl.text("Fixed the off-by-one; the tests pass."), message_id="msg_4"),
                cl.result())
    summary = page.locator("#evidence-summary")
    # live, then as the server renders it: the latest run's count, never the runs' sum
    for reload in (False, True):
        if reload:
            page.reload()
        page.wait_for_selector("#evidence-summary >> text=tests: 47 passed (latest of 2 runs)")
        # (the Edit is no command; the sum read "tests: 93 passed, 1 failed")
        assert summary.inner_text() == "2 commands, tests: 47 passed (latest of 2 runs)"
        assert page.locator("#evidence").get_attribute("open") is None  # closed until asked

        page.locator("#evidence > summary").click()
        runs = page.locator(".evidence-item", has=page.locator("code >> text=python -m pytest -q"))
        assert runs.count() == 2
        earlier, latest = runs.nth(0), runs.nth(1)
        assert "is-superseded" in earlier.get_attribute("class")
        assert earlier.locator(".superseded").inner_text() == "earlier run"
        assert earlier.locator(".superseded").is_visible()
        assert earlier.locator(".tests").inner_text() == "pytest: 46 passed, 1 failed"
        assert "is-superseded" not in latest.get_attribute("class")
        assert latest.locator(".superseded").count() == 0
        assert latest.locator(".tests").inner_text() == "pytest: 47 passed"
