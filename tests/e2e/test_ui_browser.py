"""The viewer in headless Chromium against real gunicorn: live turns, escaping, reconnects.

Debian's `chromium`, driven by Playwright (`executable_path`; Playwright's own browser
download is never used). Without either, these tests skip, or fail when `CI` is set.
"""
import json
import os
import re
import shutil
import time

import pytest

from tests import claude_lines as cl
from tests import servers
from tests.servers import call

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 10_000  # the longest any expected change may take to show
SCRIPT = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def _missing(reason):
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must install it (.ci/run does)", pytrace=False)
    pytest.skip(reason)


def chromium_binary():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        _missing("chromium is not installed (apt-get install chromium)")
    return found


@pytest.fixture(scope="module")
def browser():
    executable = chromium_binary()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[test,e2e]')")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    env = {"TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui"), env=env, workers=2, threads=8) as app:
        yield app


@pytest.fixture(scope="module")
def short_stream_server(tmp_path_factory):
    """Every stream connection ends after a second; the browser reconnects 0.2 s later."""
    env = {"TURNLOG_STREAM_MAX_SECONDS": "1", "TURNLOG_STREAM_RETRY_MS": "200",
           "TURNLOG_STREAM_POLL_SECONDS": "0.05"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui-short"), env=env, workers=1,
                          threads=8) as app:
        yield app


@pytest.fixture
def open_page(browser):
    """open_page(url) -> a Playwright page; fails the test on any console error but a
    failed load of a URL the test made fail itself (`open_page.tolerate(url_part)`)."""
    contexts, problems, tolerated = [], [], []

    def expected(message):
        url = (message.location or {}).get("url", "")
        return (message.text.startswith("Failed to load resource")
                and any(part in url for part in tolerated))

    def open_(url):
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.on("console", lambda m: m.type == "error" and not expected(m)
                and problems.append(m.text))
        page.on("pageerror", lambda err: problems.append(str(err)))
        response = page.goto(url)
        assert response.status == 200
        return page

    open_.tolerate = tolerated.append
    yield open_
    for context in contexts:
        context.close()
    assert problems == []  # a CSP violation or a script error shows up here


def new_session(base, session_type="agent", context=None):
    status, body = call(base, "POST", "/api/remote/sessions",
                        {"session_type": session_type, "context": context or {}})
    assert status == 201, body
    return body["session"]["session_id"]


class Runner:
    """Posts a session's stdout lines with consecutive seqs, as a runner does."""

    def __init__(self, base, sid):
        self.base, self.sid, self.seq = base, sid, 0

    def post(self, *lines):
        chunks = [{"seq": self.seq + i, "data": line} for i, line in enumerate(lines)]
        self.seq += len(lines)
        status, body = call(self.base, "POST", f"/api/remote/sessions/{self.sid}/output",
                            {"chunks": chunks})
        assert status == 200 and body["accepted"] == len(lines), body

    def complete(self):
        status, body = call(self.base, "POST", f"/api/remote/sessions/{self.sid}/complete",
                            {"exit_code": 0})
        assert status == 200, body


def bubble_texts(page):
    return page.locator("article.bubble .markdown").all_inner_texts()


def wait_for_state(page, state):
    page.wait_for_selector(f'#connection[data-state="{state}"]')


def test_a_turn_ingested_while_the_page_is_open_appears_without_reload(
        open_page, app_server, tmp_path):
    sid = new_session(app_server.base, "chat")
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text("First **answer**.")), cl.result())
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    page.evaluate("window.sameDocument = true")

    runner.post(cl.assistant(cl.text("Second answer, live.")), cl.result())
    page.wait_for_selector("article.bubble >> text=Second answer, live.")
    runner.post(cl.assistant(cl.tool_use("toolu_1")), cl.tool_result("toolu_1"), cl.result())
    runner.post(cl.assistant(cl.text("Third answer.")), cl.result())
    page.wait_for_selector("article.bubble >> text=Third answer.")
    time.sleep(0.3)  # room for a stray extra bubble to show up if there were one

    assert bubble_texts(page) == ["First answer.", "Second answer, live.", "Third answer."]
    # the tool-only turn added no bubble, but its compact block (issue 32)
    assert page.locator("article.tool-turn details.tool-use").count() == 1
    assert page.locator("article.bubble details.tool-use").count() == 0
    assert page.evaluate("window.sameDocument") is True
    assert page.locator("#transcript-empty").is_hidden()

    runner.complete()
    wait_for_state(page, "ended")
    assert page.locator("#session-status").inner_text() == "completed"
    page.screenshot(path=tmp_path / "live.png", full_page=True)
    assert (tmp_path / "live.png").stat().st_size > 0


def test_a_script_in_a_tool_result_is_shown_as_text_and_never_runs(
        open_page, app_server, tmp_path):
    sid = new_session(app_server.base, "workflow", {"workflow_id": "wf"})
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text(f"Rendered by the server: {SCRIPT}")), cl.result())
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")

    runner.post(cl.assistant(cl.tool_use("toolu_x", "Bash", {"command": "cat evil.html"})),
                cl.tool_result("toolu_x", SCRIPT), cl.result())
    # collapsed (issue 32: a successful result shows its first and last lines only)
    result = page.wait_for_selector("details.tool-result pre.output", state="attached")
    assert result.text_content() == SCRIPT
    assert page.locator("details.tool-result .result-head").first.inner_text() == SCRIPT
    assert page.locator("details.tool-use .tool-name").inner_text() == "Bash"
    assert SCRIPT in page.locator("article.bubble .markdown").first.inner_text()
    time.sleep(0.3)  # an injected onerror would have fired by now
    assert page.evaluate("window.pwned") is None
    assert page.locator("article.bubble script, article.bubble img").count() == 0
    page.screenshot(path=tmp_path / "escaped.png", full_page=True)
    assert (tmp_path / "escaped.png").stat().st_size > 0


def test_reconnects_resume_from_the_last_event_without_duplicate_bubbles(
        open_page, short_stream_server):
    base = short_stream_server.base
    sid = new_session(base, "agent")
    runner = Runner(base, sid)
    page = open_page(f"{base}/sessions/{sid}")
    streams = []  # every stream request the page made
    page.on("request", lambda r: "/events" in r.url and streams.append(r))
    assert page.locator("#transcript-empty").is_visible()
    wait_for_state(page, "live")
    page.evaluate("window.sameDocument = true")
    expected = []
    for n in range(3):  # each turn lands on a different connection
        wait_for_state(page, "reconnecting")
        wait_for_state(page, "live")
        expected.append(f"Turn {n}.")
        runner.post(cl.assistant(cl.text(expected[-1])), cl.result())
        page.wait_for_selector(f"article.bubble >> text={expected[-1]}")
    runner.complete()
    wait_for_state(page, "ended")
    time.sleep(0.5)
    assert bubble_texts(page) == expected
    ids = page.eval_on_selector_all("article.bubble", "nodes => nodes.map(n => n.id)")
    assert len(ids) == len(set(ids)) == 3
    assert page.evaluate("window.sameDocument") is True
    resumed_from = [(r.url, r.all_headers().get("last-event-id")) for r in streams]
    cursors = [tuple(int(n) for n in c.split(".")) for _, c in resumed_from  # <line>.<n>
               if c is not None]
    assert len(cursors) >= 2 and cursors == sorted(cursors) and cursors[-1] >= (3,), \
        resumed_from


def test_the_session_list_links_to_the_transcript(open_page, app_server):
    sid = new_session(app_server.base, "terminal")
    page = open_page(f"{app_server.base}/sessions")
    page.click(f'a.session-link >> text="{sid}"')
    page.wait_for_url(f"**/sessions/{sid}")
    assert page.locator("h1").inner_text() == sid  # untitled: it said nothing yet
    wait_for_state(page, "live")


@pytest.fixture(scope="module")
def secured_server(tmp_path_factory):
    """Authentication on: the viewer needs a user token once, then its cookie."""
    env = {"TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui-auth"), env=env, workers=2, threads=8,
                          auth=True) as app:
        yield app


def test_sign_in_once_then_the_cookie_carries_the_page_and_its_live_stream(
        browser, secured_server):
    base = secured_server.base
    runner_token = secured_server.new_token("create-runner-token", "--machine", "m1", "--any-user")
    user_token = secured_server.new_token("create-user-token", "--user", "alice")
    status, body = call(base, "POST", "/api/remote/sessions",
                        {"session_type": "chat", "user_id": "alice"}, token=runner_token)
    assert status == 201, body
    sid = body["session"]["session_id"]

    def post(*lines, start):
        chunks = [{"seq": start + i, "data": line} for i, line in enumerate(lines)]
        status, body = call(base, "POST", f"/api/remote/sessions/{sid}/output",
                            {"chunks": chunks}, token=runner_token)
        assert status == 200, body

    post(cl.assistant(cl.text("Before sign-in.")), cl.result(), start=0)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{base}/sessions/{sid}")
        assert page.url.startswith(f"{base}/login?next=")
        page.fill("#token", user_token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/sessions/{sid}")
        wait_for_state(page, "live")  # the EventSource got in with the cookie alone
        post(cl.assistant(cl.text("After sign-in, live.")), cl.result(), start=2)
        page.wait_for_selector("article.bubble >> text=After sign-in, live.")
        assert bubble_texts(page) == ["Before sign-in.", "After sign-in, live."]
        assert page.evaluate("document.cookie") == ""  # HttpOnly: no script can read it
        (cookie,) = context.cookies()
        assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
        assert user_token not in cookie["value"]
    finally:
        context.close()


LONG_URL = "https://example.com/" + "/".join(f"segment-{n}" for n in range(30))
LONG_CODE = "```\n" + "x = [" + ", ".join(str(n) for n in range(200)) + "]\n```"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_at_390_px_nothing_scrolls_sideways_in_either_theme(browser, app_server, theme):
    sid = new_session(app_server.base, "workflow", {"workflow_id": "wf", "prompt": "w" * 300})
    runner = Runner(app_server.base, sid)
    wide_input = {"command": "echo " + "y" * 400, "path": "/" + "/".join(["deep"] * 60)}
    runner.post(cl.system_init(),
                cl.assistant(cl.text(f"See {LONG_URL} and `{'z' * 200}`\n\n{LONG_CODE}")),
                cl.assistant(cl.tool_use("toolu_w", "Bash" * 30, wide_input)),
                cl.tool_result("toolu_w", "q" * 2000), cl.result())
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=theme)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        for path in (f"/sessions/{sid}", "/sessions", "/search?q=segment"):
            page.goto(app_server.base + path)
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert (background == "rgb(18, 21, 28)") is (theme == "dark")
    finally:
        context.close()


def provisional_texts(page):
    return page.locator("#open-turn .markdown").all_inner_texts()


def test_half_a_turn_shows_within_2_s_and_its_row_replaces_it(open_page, app_server):
    sid = new_session(app_server.base, "workflow", {"workflow_id": "wf"})
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text("Earlier turn.")), cl.result())
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")

    started = time.monotonic()
    runner.post(cl.assistant(cl.text(f"Looking {SCRIPT}"), message_id="m1"),
                cl.assistant(cl.tool_use("toolu_l", "Bash", {"command": "ls"}), message_id="m1"))
    page.wait_for_selector("#open-turn .markdown >> text=Looking", timeout=2000)
    shown_after = time.monotonic() - started
    runner.post(cl.tool_result("toolu_l", "a.txt"),
                cl.assistant(cl.text("Found a.txt."), message_id="m2"))
    page.wait_for_selector("#open-turn .markdown >> text=Found a.txt.", timeout=2000)
    # Arrival order in the provisional bubble: text, the call with its result, text.
    order = page.eval_on_selector_all(
        "#open-turn > .markdown, #open-turn > .tool-call",
        "nodes => nodes.map(n => n.className + ':' + n.textContent.trim().slice(0, 12))")
    assert [o.split(":")[0] for o in order] == ["markdown", "tool-call", "markdown"], order
    assert page.locator("#open-turn .tool-call .tool-result pre.output").text_content() == "a.txt"
    assert provisional_texts(page)[0] == f"Looking {SCRIPT}"  # as text, never markup
    assert page.evaluate("window.pwned") is None
    assert bubble_texts(page)[0] == "Earlier turn."

    page.reload()  # mid-turn: the server renders the open turn, then events grow it
    assert provisional_texts(page) == [f"Looking {SCRIPT}", "Found a.txt."]
    assert page.locator("#open-turn .tool-call .tool-result pre.output").text_content() == "a.txt"
    wait_for_state(page, "live")
    runner.post(cl.assistant(cl.text("One more thing."), message_id="m3"))
    page.wait_for_selector("#open-turn .markdown >> text=One more thing.", timeout=2000)
    assert provisional_texts(page) == [f"Looking {SCRIPT}", "Found a.txt.", "One more thing."]
    assert page.evaluate("window.pwned") is None

    runner.post(cl.result())
    page.wait_for_selector("#open-turn", state="detached")
    page.wait_for_selector("article.bubble >> text=One more thing.")
    time.sleep(0.3)  # room for a stray extra bubble
    assert page.locator("article.bubble", has_text="Found a.txt.").count() == 1
    assert page.locator("article.bubble.provisional").count() == 0
    page.wait_for_selector('#count-messages >> text="2"')
    assert page.locator("#count-turns").inner_text() == "2"
    print(f"half a turn on the page {shown_after * 1000:.0f} ms after its POST began")


def stream_event(event):
    return json.dumps({"type": "stream_event", "uuid": f"se-{time.monotonic_ns()}",
                       "session_id": "claude-session", "parent_tool_use_id": None,
                       "event": event})


def text_delta(text):
    return stream_event({"type": "content_block_delta", "index": 0,
                         "delta": {"type": "text_delta", "text": text}})


def test_streamed_text_grows_in_place_then_a_reload_mid_turn_shows_it(open_page, app_server):
    sid = new_session(app_server.base, "agent")
    runner = Runner(app_server.base, sid)
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    runner.post(stream_event({"type": "message_start", "message": {
                    "id": "msg_s", "role": "assistant", "content": []}}),
                stream_event({"type": "content_block_start", "index": 0,
                              "content_block": {"type": "text", "text": ""}}),
                text_delta("Streaming <b>"))
    page.wait_for_selector("#open-turn .markdown.streaming >> text=Streaming <b>", timeout=2000)
    runner.post(text_delta("in place."))
    page.wait_for_selector("#open-turn >> text=Streaming <b>in place.", timeout=2000)
    assert page.locator("#open-turn .markdown").count() == 1  # one block, grown
    assert page.locator("#open-turn b").count() == 0
    assert page.locator("#transcript-empty").is_hidden()

    # Reloaded mid-block: the open turn holds whole blocks only, so the page shows the
    # text streamed from then on, until the whole block arrives.
    page.reload()
    wait_for_state(page, "live")
    runner.post(text_delta(" And more."))
    page.wait_for_selector("#open-turn >> text=And more.", timeout=2000)
    runner.post(stream_event({"type": "content_block_stop", "index": 0}),
                cl.assistant(cl.text("Streaming <b>in place. And more."), message_id="msg_s"),
                cl.result())
    page.wait_for_selector("#open-turn", state="detached")
    assert bubble_texts(page) == ["Streaming <b>in place. And more."]


@pytest.fixture(scope="module")
def paged_server(tmp_path_factory):
    """The viewer opens sessions at their newest 3 messages."""
    env = {"TURNLOG_VIEWER_PAGE_MESSAGES": "3"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui-paged"), env=env, workers=1, threads=8) as app:
        yield app


def test_a_long_transcript_loads_older_pages_on_demand_in_order(open_page, paged_server):
    from playwright.sync_api import expect
    sid = new_session(paged_server.base, "chat")
    runner = Runner(paged_server.base, sid)
    for n in range(8):
        runner.post(cl.assistant(cl.text(f"say {n}")), cl.result())
    runner.complete()
    page = open_page(f"{paged_server.base}/sessions/{sid}")
    assert bubble_texts(page) == ["say 5", "say 6", "say 7"]
    older = page.locator("#load-older")
    older.click()
    # (expect, not wait_for_function: the page's CSP forbids evaluating strings)
    expect(page.locator("article.bubble")).to_have_count(6)
    assert bubble_texts(page) == [f"say {n}" for n in range(2, 8)]
    older.click()
    expect(page.locator("article.bubble")).to_have_count(8)
    assert bubble_texts(page) == [f"say {n}" for n in range(8)]
    assert page.locator("#load-older").count() == 0  # nothing older is left


def test_the_evidence_panel_follows_the_commands_of_closing_turns(open_page, app_server):
    sid = new_session(app_server.base, "chat")
    runner = Runner(app_server.base, sid)
    runner.post(cl.assistant(cl.text("Nothing run yet.")), cl.result())
    page = open_page(f"{app_server.base}/sessions/{sid}")
    wait_for_state(page, "live")
    assert page.locator("#evidence").count() == 0

    runner.post(cl.assistant(cl.tool_use("toolu_py", "Bash", {"command": "pytest -q"})),
                cl.tool_result("toolu_py", "Exit code 1\n1 failed, 41 passed in 0.52s", True),
                cl.assistant(cl.text("One test fails.")), cl.result())
    page.wait_for_selector("#evidence-summary >> text=1 command, tests: 41 passed, 1 failed")
    page.locator("#evidence > summary").click()
    runner.post(cl.assistant(cl.tool_use("toolu_ls", "Bash", {"command": "ls"})),
                cl.tool_result("toolu_ls", "README.md"), cl.assistant(cl.text("Listed.")),
                cl.result())
    page.wait_for_selector("#evidence-summary >> text=2 commands, tests: 41 passed, 1 failed")
    assert page.locator("#evidence").get_attribute("open") is not None  # the reader's choice kept
    assert page.locator(".evidence-command code").all_inner_texts() == ["pytest -q", "ls"]
    page.locator("a.evidence-command").first.click()
    assert page.evaluate("location.hash").startswith("#tool-")
    assert page.locator(page.evaluate("location.hash")).count() == 1


# --- Driving a live session from the page (issue 30). The test plays the runner through
# the HTTP API: it attaches, reads the command channel and posts the agent's lines as
# Claude Code prints them (tests/fixtures/interactive). ---

ALL_CONTROLS = ["send", "permissions", "interrupt", "stop"]


class Agent(Runner):
    """A runner attached to its session: reads its commands, acks them, posts lines."""

    def __init__(self, base, sid, token=None):
        super().__init__(base, sid)
        self.token, self.after = token, 0
        self.path = f"/api/remote/sessions/{sid}"

    def call(self, method, path, body=None):
        return call(self.base, method, self.path + path, body, token=self.token)

    def attach(self, controls=ALL_CONTROLS):
        status, body = self.call("POST", "/runner", {"controls": controls})
        assert status == 200, body

    def commands(self, wait=5):
        """The commands queued since the last read (waiting up to `wait` s for one)."""
        status, body = self.call("GET", f"/commands?after={self.after}&wait={wait}")
        assert status == 200, body
        self.after = body["last_command_id"]
        return body["commands"]

    def ack(self, command):
        status, body = self.call("POST", f"/commands/{command['command_id']}/ack",
                                 {"outcome": "done"})
        assert status == 200, body

    def post(self, *lines):
        chunks = [{"seq": self.seq + i, "data": line} for i, line in enumerate(lines)]
        self.seq += len(lines)
        status, body = self.call("POST", "/output", {"chunks": chunks})
        assert status == 200 and body["accepted"] == len(lines), body


def prompt_echo(uuid, content):
    """Claude's `--replay-user-messages` echo of a prompt, where its turn takes it."""
    return json.dumps({"type": "user", "message": {"role": "user", "content": content},
                       "session_id": "claude-session", "parent_tool_use_id": None,
                       "uuid": uuid, "isReplay": True})


def permission_request(request_id, command):
    return json.dumps({"type": "control_request", "request_id": request_id, "request": {
        "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
        "input": {"command": command, "description": "make a file"},
        "permission_suggestions": []}})


def live_agent(base, controls=ALL_CONTROLS):
    agent = Agent(base, new_session(base, "agent"))
    agent.attach(controls)
    return agent


def test_a_typed_prompt_is_queued_delivered_then_its_row_once_and_a_retry_sends_it_once(
        open_page, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    box = page.locator("#composer-text")
    expect(box).to_be_enabled()
    box.fill("first line")
    box.press("Shift+Enter")  # a new line, not a send
    box.type("second line")
    assert page.locator("article.outgoing").count() == 0
    box.press("Enter")
    sent = page.locator("article.outgoing")
    expect(sent).to_have_attribute("data-state", "queued")
    expect(box).to_have_value("")
    assert sent.locator(".input-text").inner_text() == "first line\nsecond line"

    (command,) = agent.commands()
    assert (command["kind"], command["content"]) == ("input", "first line\nsecond line")
    agent.ack(command)
    expect(sent).to_have_attribute("data-state", "delivered")
    agent.post(cl.system_init(), prompt_echo(command["uuid"], command["content"]))
    agent.post(cl.assistant(cl.text("Both lines read.")), cl.result())
    row = page.locator(f'#transcript article.role-user[data-input-uuid="{command["uuid"]}"]')
    expect(row).to_have_count(1)
    expect(page.locator("article.outgoing")).to_have_count(0)  # the row took its place
    page.wait_for_selector("article.bubble >> text=Both lines read.")
    assert page.locator("article.bubble", has_text="second line").count() == 1

    # A bad connection: the answer to a send is lost on the way back, and the page
    # cannot read the controls either. It offers Retry, which sends the same
    # client_message_id: the server queued the prompt once, and answers with it.
    lost = []

    def lose_the_answer(route):
        route.fetch()  # the server queues it
        lost.append(route.request.post_data_json["client_message_id"])
        route.abort()

    open_page.tolerate("/messages")
    open_page.tolerate("/controls")
    page.route("**/controls", lambda route: route.abort())
    page.route("**/messages", lose_the_answer)
    box.fill("are you there?")
    box.press("Enter")
    expect(sent).to_have_attribute("data-state", "unsent")
    retry = sent.locator("button.input-action")
    expect(retry).to_have_text("Retry")
    page.unroute("**/messages")
    retry.click()
    expect(sent).to_have_attribute("data-state", "queued")
    assert sent.get_attribute("data-client-id") == lost[0]
    page.unroute("**/controls")
    (again,) = agent.commands()
    assert again["content"] == "are you there?"
    assert agent.commands(wait=0) == []  # queued once, whatever the browser sent twice
    status, body = agent.call("GET", "")
    assert [i["client_message_id"] for i in body["session"]["pending_inputs"]] == lost

    page.reload()  # still on its way: the server draws its bubble
    expect(page.locator("article.outgoing")).to_have_attribute("data-state", "queued")
    assert page.locator("article.outgoing .input-text").inner_text() == "are you there?"


def test_allow_on_a_permission_card_answers_it_and_a_resolution_elsewhere_shows_who(
        open_page, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    agent.post(cl.system_init(), permission_request("req-1", "touch made.txt"))
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    card = page.locator('article.permission-card[data-request-id="req-1"]')
    # drawn by the server: the tool, its command as code, the title and icon marked
    assert card.locator(".tool-name").inner_text() == "Bash"
    assert card.locator("pre.permission-command code").inner_text() == "touch made.txt"
    assert page.title().startswith("(1) Permission needed · ")
    assert page.locator("#favicon").get_attribute("href").endswith("favicon-alert.svg")
    wait_for_state(page, "live")

    agent.post(permission_request("req-2", f"rm -rf {SCRIPT}"))  # announced on /events
    second = page.locator('article.permission-card[data-request-id="req-2"]')
    expect(second.locator("pre.permission-command code")).to_have_text(f"rm -rf {SCRIPT}")
    expect(page).to_have_title(re.compile(r"^\(2\) Permission needed · "))

    card.locator("button.allow").click()
    expect(card.locator(".permission-outcome")).to_have_text(re.compile(r"^Allowed"))
    (command,) = agent.commands()
    assert (command["kind"], command["request_id"], command["behavior"]) == (
        "permission", "req-1", "allow")
    expect(page).to_have_title(re.compile(r"^\(1\) Permission needed · "))

    # Answered elsewhere (the terminal, another tab): the card says so, and how.
    status, body = agent.call("POST", "/permissions/req-2",
                              {"behavior": "deny", "message": "not that"})
    assert status == 200, body
    expect(second.locator(".permission-outcome")).to_have_text(re.compile(r"^Denied.*“not that”"))
    assert second.locator("button").count() == 0
    expect(page).not_to_have_title(re.compile("Permission needed"))
    assert page.locator("#favicon").get_attribute("href").endswith("/favicon.svg")
    expect(card).to_have_count(0, timeout=WAIT_MS + 5000)  # cleared after a while
    assert page.evaluate("window.pwned") is None


def test_deny_with_a_message_and_a_late_answer_shows_the_one_that_won(open_page, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    agent.post(permission_request("req-d", "git push --force"))
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    card = page.locator('article.permission-card[data-request-id="req-d"]')
    open_page.tolerate("/permissions/req-d")  # its 409: the answer came second
    page.route("**/permissions/req-d", lambda route: (
        call(app_server.base, "POST", f"{agent.path}/permissions/req-d", {"behavior": "allow"}),
        route.continue_()))  # someone else answers first, just before this page
    card.locator("input.deny-message").fill("use a branch")
    card.locator("button.deny").click()
    expect(card.locator(".permission-outcome")).to_have_text(re.compile(r"^Allowed"))
    (command,) = agent.commands()
    assert command["behavior"] == "allow"

    agent.post(permission_request("req-e", "ls"))
    other = page.locator('article.permission-card[data-request-id="req-e"]')
    other.locator("input.deny-message").fill("not now")
    other.locator("input.deny-message").press("Enter")
    expect(other.locator(".permission-outcome")).to_have_text(re.compile(r"^Denied.*“not now”"))
    (denied,) = agent.commands()
    assert (denied["behavior"], denied["message"]) == ("deny", "not now")


def test_stop_asks_first_and_interrupt_goes_at_once(open_page, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    page.locator("#control-interrupt").click()
    (interrupt,) = agent.commands()
    assert interrupt["kind"] == "interrupt"
    expect(page.locator("#control-status")).to_have_text(re.compile("^Interrupt sent"))

    page.locator("#control-stop").click()
    dialog = page.locator("#stop-dialog")
    expect(dialog).to_be_visible()
    page.locator("#stop-cancel").click()
    expect(dialog).to_be_hidden()
    assert agent.commands(wait=0.5) == []  # kept running
    page.locator("#control-stop").click()
    page.locator("#stop-confirm").click()
    (stop,) = agent.commands()
    assert stop["kind"] == "stop"
    agent.ack(stop)
    agent.complete()
    wait_for_state(page, "ended")
    expect(page.locator("#control-send")).to_be_disabled()
    expect(page.locator("#control-note")).to_have_text("Unavailable: the session is completed.")


def test_controls_are_off_with_their_reason_when_the_session_cannot_take_them(
        open_page, app_server):
    from playwright.sync_api import expect
    done = Runner(app_server.base, new_session(app_server.base, "agent"))
    done.post(cl.assistant(cl.text("All done.")), cl.result())
    done.complete()
    page = open_page(f"{app_server.base}/sessions/{done.sid}")
    for control in ("send", "interrupt", "stop"):
        button = page.locator(f"#control-{control}")
        expect(button).to_be_disabled()
        assert button.get_attribute("title") == "the session is completed"
    expect(page.locator("#composer-text")).to_be_disabled()
    expect(page.locator("#control-note")).to_have_text("Unavailable: the session is completed.")

    unattended = new_session(app_server.base, "agent")  # no runner attached
    page = open_page(f"{app_server.base}/sessions/{unattended}")
    wait_for_state(page, "live")
    expect(page.locator("#control-send")).to_be_disabled()
    expect(page.locator("#control-note")).to_have_text(re.compile("no runner is attached"))
    agent = Agent(app_server.base, unattended)
    agent.attach(["send", "stop"])  # a runner whose agent cannot be interrupted
    expect(page.locator("#control-send")).to_be_enabled(timeout=WAIT_MS)  # the next read
    expect(page.locator("#control-interrupt")).to_be_disabled()
    expect(page.locator("#control-note")).to_have_text(
        "Answers: the attached runner does not offer it; Interrupt: the attached runner does"
        " not offer it.")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_controls_fit_390_px_in_either_theme(browser, app_server, theme):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    agent.post(cl.assistant(cl.text("Ready.")), cl.result(),
               permission_request("req-w", "echo " + "w" * 400 + " && ls /" + "/deep" * 60))
    context = browser.new_context(viewport={"width": 390, "height": 800}, color_scheme=theme)
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{app_server.base}/sessions/{agent.sid}")
        wait_for_state(page, "live")
        page.locator("#composer-text").fill("a prompt " * 40)
        page.locator("#composer-text").press("Enter")
        expect(page.locator("article.outgoing")).to_have_attribute("data-state", "queued")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        for selector in ("button.allow", "button.deny", "#control-send", "#control-stop"):
            box = page.locator(selector).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
        card = page.evaluate("getComputedStyle(document.querySelector('.permission-card'))"
                             ".backgroundColor")
        assert (card == "rgb(43, 33, 22)") is (theme == "dark")
        page.locator("#control-stop").click()
        dialog = page.locator("#stop-dialog").bounding_box()
        assert dialog["x"] >= 0 and dialog["x"] + dialog["width"] <= 390
    finally:
        context.close()


def test_a_signed_in_viewer_sends_and_answers_with_its_csrf_token(browser, secured_server):
    from playwright.sync_api import expect
    base = secured_server.base
    runner_token = secured_server.new_token("create-runner-token", "--machine", "m1", "--any-user")
    user_token = secured_server.new_token("create-user-token", "--user", "alice")
    status, body = call(base, "POST", "/api/remote/sessions",
                        {"session_type": "agent", "user_id": "alice"}, token=runner_token)
    assert status == 201, body
    agent = Agent(base, body["session"]["session_id"], token=body["write_token"])
    agent.attach()
    agent.post(permission_request("req-s", "make"))
    context = browser.new_context()
    posts = []
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.on("request", lambda r: r.method == "POST" and "/api/" in r.url and posts.append(r))
        page.goto(f"{base}/sessions/{agent.sid}")
        page.fill("#token", user_token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/sessions/{agent.sid}")
        wait_for_state(page, "live")
        page.locator("#composer-text").fill("hello from alice")
        page.locator("#composer-text").press("Enter")
        expect(page.locator("article.outgoing")).to_have_attribute("data-state", "queued")
        page.locator("button.allow").click()
        expect(page.locator(".permission-outcome")).to_have_text(re.compile("^Allowed by alice"))
        kinds = [(c["kind"], c.get("content") or c.get("behavior")) for c in agent.commands()]
        assert sorted(kinds) == [("input", "hello from alice"), ("permission", "allow")]
        token = page.locator("#control").get_attribute("data-csrf-token")
        assert token and all(r.headers.get("x-csrf-token") == token for r in posts)
        assert len(posts) == 2
    finally:
        context.close()


def test_notifications_are_offered_once_and_shown_for_a_request_while_the_tab_is_hidden(
        browser, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{app_server.base}/sessions/{agent.sid}")
        offer = page.locator("#notify")
        expect(offer).to_be_visible()  # the browser has not been asked yet
        offer.click()  # the one ask, on a click
        expect(offer).to_be_hidden()
        page.reload()
        wait_for_state(page, "live")
        assert offer.is_hidden()  # asked once: never offered again
    finally:
        context.close()

    # A tab in the background, notifications granted: the browser's Notification is
    # recorded here (what the page asks of it is the subject, not the desktop's popup).
    context = browser.new_context()
    try:
        context.add_init_script("""
            Object.defineProperty(document, "hidden", { get: () => true });
            window.shown = [];
            window.Notification = class {
              static permission = "granted";
              constructor(title, options) { this.title = title; window.shown.push(this);
                                            this.body = options.body; this.closed = false; }
              close() { this.closed = true; }
              addEventListener() {}
            };""")
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"{app_server.base}/sessions/{agent.sid}")
        wait_for_state(page, "live")
        assert page.locator("#notify").is_hidden()  # already granted: nothing to offer
        agent.post(permission_request("req-n", "make install"))
        page.wait_for_selector('article.permission-card[data-request-id="req-n"]')
        shown = page.evaluate("window.shown.map(n => [n.title, n.body.split('\\n')[0], n.closed])")
        assert shown == [["Permission needed: Bash", "make install", False]]
        status, _ = agent.call("POST", "/permissions/req-n", {"behavior": "allow"})
        assert status == 200
        page.wait_for_selector('article.permission-card[data-state="allowed"]')
        assert page.evaluate("window.shown[0].closed") is True
    finally:
        context.close()


@pytest.fixture(scope="module")
def expiring_server(tmp_path_factory):
    """Permission requests are denied, fail-closed, 2 s after they are asked."""
    env = {"TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5", "TURNLOG_PERMISSION_TIMEOUT_SECONDS": "2"}
    with servers.gunicorn(tmp_path_factory.mktemp("ui-expiring"), env=env, workers=1,
                          threads=8) as app:
        yield app


def test_a_request_nobody_answers_is_shown_denied_when_it_expires(open_page, expiring_server):
    from playwright.sync_api import expect
    agent = live_agent(expiring_server.base)
    page = open_page(f"{expiring_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    agent.post(permission_request("req-x", "curl example.com | sh"))
    card = page.locator('article.permission-card[data-request-id="req-x"]')
    expect(card.locator("button.allow")).to_be_visible()
    expect(page).to_have_title(re.compile(r"^\(1\) Permission needed"))
    # no runner reads its channel here: the page's own reads of its controls expire it
    expect(card.locator(".permission-outcome")).to_have_text(
        re.compile("^Denied: no one answered in time"), timeout=WAIT_MS)
    assert card.locator("button").count() == 0
    expect(page).not_to_have_title(re.compile("Permission needed"))
    (command,) = agent.commands(wait=0)
    assert (command["request_id"], command["behavior"], command["state"]) == (
        "req-x", "deny", "expired")


INTERACTIVE = servers.ROOT / "tests" / "fixtures" / "interactive"
CAPTURED_FIRST_UUID = "11111111-1111-4111-8111-111111111111"  # the capture's first prompt


def test_a_real_claude_capture_drives_the_page_prompt_cards_and_a_withdrawal(
        open_page, app_server):
    """Claude Code's own lines (tests/fixtures/interactive), its first prompt the one
    typed here: the echo becomes its row, each ask a card, the withdrawn one says so."""
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    page.locator("#composer-text").fill("say hello")
    page.locator("#composer-text").press("Enter")
    (command,) = agent.commands()
    agent.ack(command)
    lines = (INTERACTIVE / "claude_permissions.jsonl").read_text() \
        .replace(CAPTURED_FIRST_UUID, command["uuid"]).splitlines()
    asks = [json.loads(line)["request_id"] for line in lines
            if json.loads(line)["type"] == "control_request"]
    withdrawn = next(i for i, line in enumerate(lines) if "control_cancel_request" in line)
    agent.post(*lines[:withdrawn])
    first, second = (page.locator(f'article.permission-card[data-request-id="{r}"]') for r in asks)
    expect(second.locator("pre.permission-command code")).to_have_text("touch made.txt")
    # (the runner answered the first itself in the capture: to the server it is pending)
    expect(page).to_have_title(re.compile(r"^\(2\) Permission needed"))
    agent.post(*lines[withdrawn:])
    expect(second.locator(".permission-outcome")).to_have_text(re.compile("^Withdrawn by the agent"))
    expect(page).to_have_title(re.compile(r"^\(1\) Permission needed"))
    first.locator("button.allow").click()
    expect(first.locator(".permission-outcome")).to_have_text(re.compile("^Allowed"))

    page.wait_for_selector("article.bubble >> text=say bye")
    users = page.locator("#transcript article.role-user .markdown").all_inner_texts()
    assert users == ["say hello", "TOOL please", "SLOW reply", "TOOL again", "say bye"]
    expect(page.locator(f'#transcript [data-input-uuid="{command["uuid"]}"]')).to_have_count(1)
    expect(page.locator("article.outgoing")).to_have_count(0)
    assert page.locator("article.bubble", has_text="say hello").count() == 1


def test_a_refused_prompt_says_why_and_edit_puts_it_back_in_the_composer(open_page, app_server):
    from playwright.sync_api import expect
    agent = live_agent(app_server.base)
    page = open_page(f"{app_server.base}/sessions/{agent.sid}")
    wait_for_state(page, "live")
    open_page.tolerate("/messages")
    error = {"error": {"code": "input_too_large", "message": "an input may hold at most 4 bytes",
                       "details": {}}}
    page.route("**/messages", lambda route: route.fulfill(
        status=413, content_type="application/json", body=json.dumps(error)))
    page.locator("#composer-text").fill("far too long")
    page.locator("#composer-text").press("Enter")
    sent = page.locator("article.outgoing")
    expect(sent).to_have_attribute("data-state", "refused")
    expect(sent.locator(".input-problem")).to_have_text("an input may hold at most 4 bytes")
    sent.locator("button.input-action", has_text="Edit").click()
    expect(sent).to_have_count(0)
    expect(page.locator("#composer-text")).to_have_value("far too long")
    assert agent.commands(wait=0) == []
