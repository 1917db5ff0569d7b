"""The HTML viewer through the test client: /sessions, /sessions/<id>, and its bubbles."""
import html as html_text
import json
import re
import time

import pytest
from flask import render_template

from app.core.inputs import input_uuid
from app.core.records import Message
from app.security_headers import CONTENT_SECURITY_POLICY
from app.ui.figures import TOKEN_SOURCES
from app.ui.transcript import bubbles
from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines

SCRIPT = "<script>window.pwned = 1</script>"


def page(client, path, status=200):
    response = client.get(path)
    assert response.status_code == status, response.data[:500]
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    return response.get_data(as_text=True)


def bubble_ids(html):
    return [int(i) for i in re.findall(r'<article class="bubble[^"]*" id="m-(\d+)"', html)]


def assert_no_inline_script(html):
    """Every script is an external module; no handler attribute, no inline style."""
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert re.fullmatch(r'<script type="module" src="/ui/static/viewer\.js">', tag), tag
    assert len(re.findall(r"<script\b", html)) <= 1
    assert not re.search(r"<[^>]+\son\w+\s*=", html)
    assert not re.search(r"<[^>]+\sstyle\s*=", html)


def test_the_session_list_shows_type_status_counts_and_a_link(client):
    chat = create_session(client, "chat")
    post_lines(client, chat, [cl.assistant(cl.text("hi")), cl.result()])
    complete(client, chat)
    flow = create_session(client, "workflow", {"workflow_id": "wf"})
    html = page(client, "/sessions")
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)[1:]  # after the header row
    assert len(rows) == 2
    assert f'href="/sessions/{flow}"' in rows[0] and f'href="/sessions/{chat}"' in rows[1]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                   rows[1], re.S)]
    assert cells[0].split() == ["hi", chat]  # the title, then the id
    # no usage report came: the tokens are the turn's own (cl.result(): 3 in, 7 out)
    assert cells[1:5] == ["chat", "completed", "1", "10"]
    assert cells[5].endswith(" UTC")
    assert "workflow" in rows[0] and "running" in rows[0]
    assert_no_inline_script(html)


def test_sessions_are_titled_by_prompt_or_first_text_with_model_and_cwd(client):
    sid = create_session(client, "agent")
    post_lines(client, sid, [cl.system_init(), cl.assistant(cl.tool_use("t1")), cl.result(),
                             cl.assistant(cl.text(f"Fixing **the** pager {SCRIPT}\nmore")),
                             cl.result()])
    asked = create_session(client, "chat", {"prompt": "Why is CI red?"})
    post_lines(client, asked, [cl.assistant(cl.text("Because.")), cl.result()])
    untitled = create_session(client, "terminal")
    listing = page(client, "/sessions")
    escaped = "Fixing the pager &lt;script&gt;window.pwned = 1&lt;/script&gt;"
    assert re.search(rf'<a class="session-link" href="/sessions/{sid}">{re.escape(escaped)}</a>',
                     listing)
    assert SCRIPT not in listing
    assert '· <code class="model">claude-sonnet-4-5</code> · <code class="cwd">/repo</code>' \
        in listing
    assert f'href="/sessions/{asked}">Why is CI red?</a>' in listing
    assert f'class="session-link untitled" href="/sessions/{untitled}">{untitled}</a>' in listing

    html = page(client, f"/sessions/{sid}")
    assert f"<title>{escaped} · turnlog</title>" in html
    assert f'<h1 id="session-title" class="session-title">{escaped}</h1>' in html
    assert f'<code class="session-id">{sid}</code>' in html and 'class="model"' in html
    assert f'<h1 id="session-title" class="session-title untitled">{untitled}</h1>' in page(
        client, f"/sessions/{untitled}")


def test_the_session_list_pages_by_cursor(client, monkeypatch):
    monkeypatch.setattr("app.ui.routes.SESSIONS_PER_PAGE", 1)
    older, newer = create_session(client), create_session(client)
    first = page(client, "/sessions")
    assert newer in first and older not in first
    next_url = re.search(r'<a rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
    second = page(client, next_url)
    assert older in second and newer not in second


def test_an_empty_list_says_so(client):
    assert "No sessions yet." in page(client, "/sessions")


def test_every_ingested_block_kind_is_rendered(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf"})
    post_lines(client, sid, [
        cl.system_init(),
        cl.assistant(cl.thinking("Weighing **options**"), message_id="m1"),
        cl.assistant({"type": "redacted_thinking", "data": "b3BhcXVl"}, message_id="m1"),
        cl.assistant(cl.text("I will run **ls** in `/repo`."), message_id="m1"),
        cl.assistant(cl.tool_use("toolu_7", "Bash", {"command": "ls -la", "timeout": 5}),
                     message_id="m1"),
        cl.tool_result("toolu_7", "boom: no such file", is_error=True),
        cl.result(),
    ])
    html = page(client, f"/sessions/{sid}")
    system, turn = re.findall(r"<article.*?</article>", html, re.S)
    assert 'class="bubble role-system"' in system and "Session started: model=" in system
    assert 'class="bubble role-assistant"' in turn
    assert "<p>I will run <strong>ls</strong> in <code>/repo</code>.</p>" in turn
    assert re.search(r'<details class="block thinking">\s*<summary><span class="label">'
                     r'Thinking</span></summary>\s*<div class="thinking-text markdown">'
                     r"<p>Weighing <strong>options</strong></p>", turn)
    assert "redacted by the provider" in turn and "b3BhcXVl" not in turn
    assert re.search(r'<details class="block tool-use" id="tool-\d+-toolu_7">', turn)
    assert '<span class="tool-name">Bash</span> <code class="preview">ls -la</code>' in turn
    assert "{\n  &#34;command&#34;: &#34;ls -la&#34;,\n  &#34;timeout&#34;: 5\n}" in turn
    assert re.search(r'<details class="block tool-result is-error" open>\s*<summary>'
                     r'<span class="label">Error</span>\s*<a class="tool-link" '
                     r'href="#tool-\d+-toolu_7">Bash · toolu_7</a>', turn)
    assert '<pre class="output">boom: no such file</pre>' in turn
    # In arrival order: thinking, text, the call with its result nested under it.
    assert turn.index("Thinking") < turn.index("I will run") < turn.index("tool-use")
    assert re.search(r'<div class="tool-call" data-call-id="toolu_7">\s*<details class="block tool-use".*?'
                     r'<details class="block tool-result.*?</details>\s*</div>', turn, re.S)
    assert turn.count("I will run") == 1
    assert_no_inline_script(html)


def test_reasoning_unknown_blocks_and_the_plain_fallback_in_the_template(app):
    messages = [
        Message(1, "s", "assistant", "", [{"type": "reasoning", "text": "because"}], {},
                "remote_live", "k1", "2026-12-02T16:49:41.846043Z"),
        Message(2, "s", "system", "Turn failed (error_max_turns): <b>stop</b>", [], {},
                "remote_live", "k2", "2026-12-02T16:49:42.000000Z"),
        Message(3, "s", "assistant", "", [{"type": "citation", "url": "<x>"}], {},
                "remote_live", "k3", "2026-12-02T16:49:43.000000Z"),
        Message(4, "s", "assistant", "  ", [], {}, "remote_live", "k4",
                "2026-12-02T16:49:44.000000Z"),
    ]
    with app.test_request_context():
        html = render_template("ui/_bubbles.html", bubbles=bubbles(messages))
    assert bubble_ids(html) == [1, 2, 3]  # the empty row makes no bubble
    assert '<span class="label">Reasoning</span>' in html and "because" in html
    assert "<p>Turn failed (error_max_turns): &lt;b&gt;stop&lt;/b&gt;</p>" in html
    assert '<span class="label">citation</span>' in html and "&lt;x&gt;" in html
    assert "2026-12-02 16:49:42 UTC" in html


def test_agent_markup_is_shown_as_text(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf"})
    post_lines(client, sid, [
        cl.assistant(cl.text(f"look: {SCRIPT} <img src=x onerror=alert(1)>")),
        cl.assistant(cl.tool_use("t1", f"Bash{SCRIPT}", {"command": SCRIPT})),
        cl.tool_result("t1", SCRIPT),
        cl.result(),
    ])
    html = page(client, f"/sessions/{sid}")
    assert SCRIPT not in html and "<img" not in html
    assert html.count("&lt;script&gt;window.pwned = 1&lt;/script&gt;") >= 4
    assert_no_inline_script(html)


def test_a_tool_only_ordinary_turn_adds_no_bubble_but_a_compact_block_with_its_result(client):
    """Issue 32: the turn writes no row, and so no bubble; its call and result (kept in
    session_tool_results) show as a block of their own."""
    sid = create_session(client, "chat")
    post_lines(client, sid, [cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()])
    html = page(client, f"/sessions/{sid}")
    assert bubble_ids(html) == []
    [block] = re.findall(r'<article class="tool-turn" id="tt-turn-[^"]+".*?</article>', html, re.S)
    assert '<span class="tool-name">Bash</span>' in block
    assert '<pre class="output">README.md\n</pre>' in block
    assert '<p id="transcript-empty" class="empty" hidden>No messages yet.</p>' in html
    assert_no_inline_script(html)


def test_the_page_follows_the_stream_from_its_last_event(client):
    sid = create_session(client, "agent")
    html = page(client, f"/sessions/{sid}")
    assert f'data-events-url="/api/remote/sessions/{sid}/events?after=-1"' in html
    assert 'data-live="true"' in html and 'data-state="connecting"' in html
    post_lines(client, sid, [cl.assistant(cl.text("one")), cl.result(), "noise"])
    complete(client, sid)
    html = page(client, f"/sessions/{sid}")
    assert f'data-events-url="/api/remote/sessions/{sid}/events?after=2"' in html
    assert 'data-live="false"' in html and 'data-state="ended"' in html
    assert re.search(r'data-last-message-id="(\d+)"', html).group(1) == str(bubble_ids(html)[-1])


def test_bubbles_after_a_message_id_come_as_a_fragment(client, app):
    sid = create_session(client, "agent")
    post_lines(client, sid, [cl.assistant(cl.text("one")), cl.result(),
                             cl.assistant(cl.text("two")), cl.result(),
                             cl.assistant(cl.text("three")), cl.result()])
    [first, second, third] = bubble_ids(page(client, f"/sessions/{sid}"))
    response = client.get(f"/sessions/{sid}/bubbles?after={first}")
    assert response.mimetype == "text/html"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Last-Message-Id"] == str(third)
    assert "X-Next-Cursor" not in response.headers
    assert bubble_ids(response.get_data(as_text=True)) == [second, third]
    assert "<html" not in response.get_data(as_text=True)

    app.config["MAX_PAGE_SIZE"] = 1
    paged = client.get(f"/sessions/{sid}/bubbles?after={first}")
    assert bubble_ids(paged.get_data(as_text=True)) == [second]
    assert paged.headers["X-Next-Cursor"] == paged.headers["X-Last-Message-Id"] == str(second)

    caught_up = client.get(f"/sessions/{sid}/bubbles?after={third}")
    assert caught_up.get_data(as_text=True).strip() == ""
    assert "X-Last-Message-Id" not in caught_up.headers


@pytest.mark.parametrize("path, status", [
    ("/sessions/no-such-session", 404),
    ("/sessions/no-such-session/bubbles", 404),
])
def test_an_unknown_session_is_an_html_page(client, path, status):
    response = client.get(path)
    assert response.status_code == status and response.mimetype == "text/html"
    assert "no session no-such-session" in response.get_data(as_text=True)
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


def test_a_bad_cursor_is_a_422_page(client):
    sid = create_session(client)
    assert client.get(f"/sessions/{sid}/bubbles?after=abc").status_code == 422
    assert client.get("/sessions?cursor=%%%").status_code == 422


@pytest.mark.parametrize("name, mimetype", [("viewer.js", "text/javascript"),
                                            ("viewer.css", "text/css")])
def test_static_files_are_served_under_the_policy(client, name, mimetype):
    response = client.get(f"/ui/static/{name}")
    assert response.status_code == 200 and response.mimetype == mimetype
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    response.close()


def test_search_page_links_each_match_to_its_bubble_and_escapes_the_snippet(client):
    sid = create_session(client, "chat")
    post_lines(client, sid, [cl.assistant(cl.text(f'the flaky test & its "quoted" output {SCRIPT}')),
                             cl.result(),
                             cl.assistant(cl.text("no match here")), cl.result()])
    html = page(client, "/search?q=flaky")
    assert_no_inline_script(html)
    (message_id,) = re.findall(rf'href="/sessions/{sid}#m-(\d+)"', html)
    assert int(message_id) in bubble_ids(page(client, f"/sessions/{sid}"))
    assert "<strong>flaky</strong>" in html
    # SQLite keeps the tag in the snippet, PostgreSQL's headline drops tags; both keep
    # the bare & and quotes, which must arrive escaped.
    assert "test &amp; its &#34;quoted&#34; output" in html and SCRIPT not in html
    assert "no match here" not in html


def test_search_page_without_a_query_shows_the_form_only(client):
    html = page(client, "/search")
    assert 'name="q"' in html and "Nothing matches" not in html
    assert "Nothing matches" in page(client, "/search?q=absent")


def test_the_header_counters_come_as_json(client):
    sid = create_session(client, "chat")
    post_lines(client, sid, [cl.assistant(cl.text("one")), cl.result(),
                             cl.assistant(cl.tool_use("t1")), cl.result()])
    response = client.get(f"/sessions/{sid}/counters")
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    # cl.result() reports 3 in and 7 out for each turn; no usage report came
    figures = response.get_json()
    updated_at = figures.pop("updated_at")
    # no usage report came: the tokens are what the turns reported (3 in, 7 out each)
    assert figures == {"status": "running", "message_count": 1,
                       "conversation_turn_count": 2, "tokens": 20,
                       "tokens_title": TOKEN_SOURCES["transcript"],
                       "cost": "n/a",  # no cost reported
                       "title": "one", "untitled": False, "meta": [["session-id", sid]]}
    html = page(client, f"/sessions/{sid}")
    assert '<dd id="count-messages">1</dd>' in html and '<dd id="count-turns">2</dd>' in html
    assert "<dt>Tokens</dt><dd id=\"count-tokens\">20</dd>" in html
    assert "<dt>Cost</dt><dd id=\"count-cost\">n/a</dd>" in html
    assert f'<time id="updated-at" datetime="{updated_at}">' in html
    assert "Transcript tokens" not in html and "Reported tokens" not in html
    assert client.get("/sessions/nope/counters").status_code == 404



def test_the_list_and_the_page_show_one_token_figure_the_usage_reports_when_any(client):
    sid = create_session(client, "chat")
    post_lines(client, sid, [cl.assistant(cl.text("one")), cl.result()])

    def shown():
        [row] = [r for r in re.findall(r"<tr>(.*?)</tr>", page(client, "/sessions"), re.S)
                 if sid in r]
        listed = re.search(r'data-label="tokens" title="([^"]*)">(\d+)<', row).groups()
        html = page(client, f"/sessions/{sid}")
        on_page = (re.search(r'<div id="tokens-fact" title="([^"]*)">', html).group(1),
                   re.search(r'<dd id="count-tokens">(\d+)</dd>', html).group(1))
        counters = client.get(f"/sessions/{sid}/counters").get_json()
        assert listed == on_page
        assert (html_text.unescape(listed[0]), int(listed[1])) == (counters["tokens_title"],
                                                                   counters["tokens"])
        return int(listed[1]), html_text.unescape(listed[0])

    assert shown() == (10, TOKEN_SOURCES["transcript"])  # the turn's own 3 in, 7 out
    reported = client.post(f"/api/remote/sessions/{sid}/usage", json={
        "report_id": "r1", "input_tokens": 100, "output_tokens": 23, "requests": 1})
    assert reported.status_code == 200, reported.get_json()
    assert shown() == (123, TOKEN_SOURCES["reported"])


def test_a_long_session_is_titled_by_its_opening_rows_not_its_newest_page(client, app):
    app.config["VIEWER_PAGE_MESSAGES"] = 2
    sid = create_session(client, "agent")
    lines = [cl.system_init(), cl.assistant(cl.text("The very first words.")), cl.result()]
    for n in range(4):
        lines += [cl.assistant(cl.text(f"Later {n}.")), cl.result()]
    post_lines(client, sid, lines)
    html = page(client, f"/sessions/{sid}")
    assert "The very first words." not in re.findall(r"<article.*?</article>", html, re.S)[0]
    assert '<h1 id="session-title" class="session-title">The very first words.</h1>' in html
    assert '<code class="model">claude-sonnet-4-5</code>' in html
    counters = client.get(f"/sessions/{sid}/counters").get_json()
    assert counters["title"] == "The very first words."
    assert counters["meta"] == [["session-id", sid], ["model", "claude-sonnet-4-5"],
                                ["cwd", "/repo"]]


def test_the_live_bubbles_text_is_rendered_by_the_bubbles_renderer(client):
    response = client.post("/ui/markdown", json={"text": f"Use **ls** `-la` {SCRIPT}"})
    assert response.status_code == 200 and response.headers["Cache-Control"] == "no-store"
    html = response.get_json()["html"]
    assert html.startswith("<p>Use <strong>ls</strong> <code>-la</code> &lt;script&gt;")
    assert SCRIPT not in html
    thinking = client.post("/ui/markdown", json={"text": "**Reading the tests**\nIn *tests/*.",
                                                 "kind": "thinking"}).get_json()
    assert thinking == {"title": "Reading the tests", "html": "<p>In <em>tests/</em>.</p>"}
    for body in ({}, {"text": 3}, {"text": "x", "kind": "html"}, {"text": "x", "more": 1}):
        refused = client.post("/ui/markdown", json=body)
        assert refused.status_code == 422, body
    assert client.post("/ui/markdown", data="x").status_code == 422  # no JSON content type
    assert client.get("/ui/markdown").status_code == 405


@pytest.mark.parametrize("app_config", [{"AUTH_DISABLED": False}])
def test_only_a_signed_in_viewer_with_its_csrf_token_has_text_rendered(client, app):
    from app.db import writing
    from app.services import tokens
    from tests.api import bearer
    with app.app_context():
        alice = tokens.issue("user", "alice", writing())[1]
        runner = tokens.issue("runner", "m1", writing())[1]
    body = {"text": "**hi**"}
    assert client.post("/ui/markdown", json=body).status_code == 401
    assert client.post("/ui/markdown", json=body, headers=bearer(runner)).status_code == 403
    assert client.post("/ui/markdown", json=body, headers=bearer(alice)).status_code == 200
    login = client.get("/login").get_data(as_text=True)
    form_token = re.search(r'name="csrf_token" value="([^"]+)"', login).group(1)
    assert client.post("/login", data={"token": alice, "next": "/sessions",
                                       "csrf_token": form_token}).status_code == 302
    refused = client.post("/ui/markdown", json=body)
    assert refused.status_code == 400 and refused.get_json()["error"]["code"] == "csrf_failed"
    sid = client.post("/api/remote/sessions", json={"session_type": "agent", "user_id": "alice",
                                                    "machine": "m1"},
                      headers=bearer(runner)).get_json()["session"]["session_id"]
    token = re.search(r'data-csrf-token="([^"]+)"', page(client, f"/sessions/{sid}")).group(1)
    rendered = client.post("/ui/markdown", json=body, headers={"X-CSRF-Token": token})
    assert rendered.status_code == 200 and rendered.get_json()["html"] == "<p><strong>hi</strong></p>"


OPEN_TURN = {"turn_id": "turn:open", "started_at": "2026-12-02T16:49:41.000000Z",
             "visible_text": f"Half {SCRIPT}", "content_blocks": [
                 {"type": "text", "text": f"Half {SCRIPT}", "block_id": "b0"},
                 {"type": "tool_use", "id": "toolu_o", "name": "Bash",
                  "input": {"command": "ls"}, "block_id": "b1"},
                 {"type": "tool_result", "tool_use_id": "toolu_o", "content": "a.txt",
                  "block_id": "b2"}]}


@pytest.fixture
def with_open_turn(monkeypatch):
    """The session read carries OPEN_TURN, as GET /api/remote/sessions/<id> reports it."""
    from app.ui import routes

    for name in ("get_session", "get_session_tail", "get_session_summary"):
        real = getattr(routes.service, name)

        def read(*args, real=real, **kwargs):
            found = real(*args, **kwargs)
            found.open_turn = OPEN_TURN
            return found
        monkeypatch.setattr(routes.service, name, read)


def test_the_first_render_shows_the_open_turn_last_and_provisional(client, with_open_turn):
    sid = create_session(client, "agent")
    post_lines(client, sid, [cl.assistant(cl.text("Closed turn.")), cl.result()])
    html = page(client, f"/sessions/{sid}")
    articles = re.findall(r"<article.*?</article>", html, re.S)
    assert len(articles) == 2 and "Closed turn." in articles[0]
    open_turn = articles[1]
    assert open_turn.startswith('<article class="bubble role-assistant provisional" '
                                'id="open-turn" data-turn-id="turn:open" data-snapshot="true"')
    assert ('<div class="markdown" data-block-id="b0"><p>Half '
            '&lt;script&gt;window.pwned = 1&lt;/script&gt;</p></div>') in open_turn
    assert re.search(r'<div class="tool-call" data-call-id="toolu_o">\s*<details class="block '
                     r'tool-use" id="tool-open-toolu_o" data-block-id="b1">.*?<details class='
                     r'"block tool-result" data-block-id="b2">', open_turn, re.S)  # collapsed
    assert_no_inline_script(html)
    assert f'data-open-turn-url="/sessions/{sid}/open-turn"' in html

    fragment = client.get(f"/sessions/{sid}/open-turn")
    assert fragment.headers["Cache-Control"] == "no-store"
    assert fragment.get_data(as_text=True).strip() == open_turn


def test_with_no_open_turn_the_fragment_is_empty(client):
    sid = create_session(client, "agent")
    assert client.get(f"/sessions/{sid}/open-turn").get_data(as_text=True).strip() == ""
    assert 'id="open-turn"' not in page(client, f"/sessions/{sid}")


def test_half_a_real_turn_is_in_the_first_render_until_its_result(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf"})
    post_lines(client, sid, [cl.assistant(cl.text("Half said.")), cl.assistant(cl.tool_use("t1")),
                             cl.tool_result("t1", "out")])
    html = page(client, f"/sessions/{sid}")
    [open_turn] = re.findall(r'<article class="bubble role-assistant provisional".*?</article>',
                             html, re.S)
    assert '<div class="markdown"><p>Half said.</p></div>' in open_turn
    assert re.search(r'data-call-id="t1">.*?<pre class="output">out</pre>', open_turn, re.S)
    assert bubble_ids(html) == [] and 'id="transcript-empty" class="empty" hidden' in html
    assert "Half said." in client.get(f"/sessions/{sid}/open-turn").get_data(as_text=True)

    post_lines(client, sid, [cl.result()], start_seq=3)
    html = page(client, f"/sessions/{sid}")
    assert 'id="open-turn"' not in html and len(bubble_ids(html)) == 1
    assert client.get(f"/sessions/{sid}/open-turn").get_data(as_text=True).strip() == ""


def test_the_evidence_panel_counts_the_commands_and_links_each_to_its_tool_call(client):
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "streams" / "claude" / "test_runs.jsonl"
    sid = create_session(client, provider="claude")
    post_lines(client, sid, fixture.read_text().splitlines())
    complete(client, sid)
    html = page(client, f"/sessions/{sid}")
    summary = re.search(r'<span id="evidence-summary">(.*?)</span>', html).group(1)
    assert summary == "3 commands, tests: 81 passed, 2 failed, 3 skipped, 1 error"
    links = re.findall(r'<a class="evidence-command" href="#([^"]+)"><code>([^<]*)</code>', html)
    assert [command for _, command in links] == ["pytest", "git status --short", "npx jest"]
    for target, _ in links:
        assert f'id="{target}"' in html  # the tool call is on the page
    assert_no_inline_script(html)


def test_a_session_without_commands_shows_no_evidence_panel(client):
    sid = create_session(client)
    post_lines(client, sid, [cl.assistant(cl.text("hi")), cl.result()])
    assert 'id="evidence"' not in page(client, f"/sessions/{sid}")


def test_a_sub_agent_is_shown_inside_the_task_call_that_started_it(client):
    from pathlib import Path
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "streams" / "claude" / "subagent.jsonl"
    sid = create_session(client, "workflow", {"workflow_id": "wf-ui"})
    post_lines(client, sid, fixture.read_text().splitlines())
    complete(client, sid)
    html = page(client, f"/sessions/{sid}")
    task = html.index('data-call-id="toolu_T1"')
    inside = html.index('class="subagent"', task)
    grep_call = html.index('data-call-id="toolu_S1"', inside)
    task_result = html.index("toolu_T1</a>", grep_call)  # the Task's result link, after the sub-agent
    assert task < inside < grep_call < task_result
    assert html.count('class="subagent"') == 1


def _sub_agent_call(tool_id, parent):
    """A Claude line holding one Task call, made by the sub-agent of call `parent`."""
    import json
    line = json.loads(cl.assistant(cl.tool_use(tool_id, "Task", {"prompt": tool_id})))
    line["parent_tool_use_id"] = parent
    return json.dumps(line)


def test_a_300_deep_sub_agent_chain_renders_every_call(client):
    sid = create_session(client)
    lines = [cl.assistant(cl.text("Delegating."), cl.tool_use("t0", "Task", {"prompt": "t0"}))]
    lines += [_sub_agent_call(f"t{i}", f"t{i - 1}") for i in range(1, 300)]
    post_lines(client, sid, [*lines, cl.result()])
    complete(client, sid)
    html = page(client, f"/sessions/{sid}")
    assert all(f'data-call-id="t{i}"' in html for i in range(300))
    assert html.count('class="subagent"') == 8  # MAX_SUBAGENT_DEPTH levels, then flat


def test_calls_whose_parents_loop_are_all_shown(client):
    sid = create_session(client)
    post_lines(client, sid, [cl.assistant(cl.text("Delegating.")), _sub_agent_call("a", "b"), _sub_agent_call("b", "a"),
                             _sub_agent_call("self", "self"), cl.result()])
    complete(client, sid)
    html = page(client, f"/sessions/{sid}")
    for tool_id in ("a", "b", "self"):
        assert f'data-call-id="{tool_id}"' in html


# --- The session's controls (issue 30): drawn by the server as they are now ---

def permission_line(request_id, tool_input, tool_name="Bash"):
    return json.dumps({"type": "control_request", "request_id": request_id, "request": {
        "subtype": "can_use_tool", "tool_name": tool_name, "input": tool_input}})


def attach(client, sid, controls=("send", "permissions", "interrupt", "stop")):
    response = client.post(f"/api/remote/sessions/{sid}/runner", json={"controls": list(controls)})
    assert response.status_code == 200, response.get_json()


def cards(html):
    return re.findall(r'<article class="permission-card".*?</article>', html, re.S)


def test_a_pending_permission_is_a_card_and_marks_the_title_and_the_icon(client):
    sid = create_session(client, "agent")
    attach(client, sid)
    post_lines(client, sid, [permission_line("req-1", {"command": f"echo {SCRIPT}",
                                                        "description": "say it"}),
                             permission_line("r 2?", {"file_path": "/a.txt", "content": "x"},
                                             "Write")])
    html = page(client, f"/sessions/{sid}")
    by_id = {re.search(r'data-request-id="([^"]+)"', c).group(1): c for c in cards(html)}
    bash, write = by_id["req-1"], by_id["r 2?"]
    assert 'data-request-id="req-1"' in bash and 'data-state="pending"' in bash
    assert f'data-answer-url="/api/remote/sessions/{sid}/permissions/req-1"' in bash
    assert ('<pre class="permission-command"><code>echo &lt;script&gt;window.pwned = 1'
            '&lt;/script&gt;</code></pre>') in bash
    assert '<p class="permission-detail">say it</p>' in bash
    assert re.search(r'<button type="button" class="allow" data-behavior="allow">Allow</button>',
                     bash)
    assert 'class="deny" data-behavior="deny">Deny</button>' in bash
    # another tool: its input as JSON, the request id escaped into its URL
    assert f'data-answer-url="/api/remote/sessions/{sid}/permissions/r%202%3F"' in write
    assert '<pre class="permission-json"><code>{' in write and "&#34;content&#34;: &#34;x&#34;" in write
    assert re.search(r"<title>\(2\) Permission needed · ", html)
    assert 'id="favicon" rel="icon" type="image/svg+xml" href="/ui/static/favicon-alert.svg"' in html
    assert SCRIPT not in html
    assert_no_inline_script(html)

    fragment = page(client, f"/sessions/{sid}/permissions")
    assert sorted(re.findall(r'data-request-id="([^"]+)"', fragment)) == ["r 2?", "req-1"]
    answered = client.post(f"/api/remote/sessions/{sid}/permissions/req-1", json={"behavior": "allow"})
    assert answered.status_code == 200
    assert len(cards(page(client, f"/sessions/{sid}/permissions"))) == 1
    html = page(client, f"/sessions/{sid}")
    assert re.search(r"<title>\(1\) Permission needed · ", html)


def test_a_request_past_its_time_is_denied_before_the_page_offers_it(client, app):
    app.config["PERMISSION_TIMEOUT_SECONDS"] = 0.01
    sid = create_session(client, "agent")
    post_lines(client, sid, [permission_line("late", {"command": "ls"})])
    time.sleep(0.05)
    html = page(client, f"/sessions/{sid}")
    assert cards(html) == []
    assert '<title>(' not in html and 'href="/ui/static/favicon.svg"' in html
    state = client.get(f"/sessions/{sid}/controls").get_json()
    assert state["pending_permissions"] == []


def test_the_controls_are_drawn_off_with_their_reasons(client):
    done = create_session(client, "agent")
    complete(client, done)
    html = page(client, f"/sessions/{done}")
    for name in ("send", "interrupt", "stop"):
        assert re.search(rf'id="control-{name}" class="control-{name}" data-control="{name}"'
                         r' disabled title="the session is completed">', html), name
    assert re.search(r'<textarea id="composer-text"[^>]*disabled></textarea>', html)
    assert ('<p id="control-note" class="control-note">Unavailable: the session is completed.</p>'
            in html)

    live = create_session(client, "agent")
    assert "no runner is attached" in page(client, f"/sessions/{live}")
    attach(client, live, ("send", "stop"))
    html = page(client, f"/sessions/{live}")
    assert re.search(r'id="control-send" class="control-send" data-control="send">Send</button>', html)
    assert re.search(r'data-control="interrupt" disabled title="the attached runner does not offer'
                     r' it">', html)
    assert ("Answers: the attached runner does not offer it; Interrupt: the attached runner does"
            " not offer it.") in html
    assert 'data-csrf-token=""' in html  # authentication off: no cookie to guard


def test_sent_prompts_are_drawn_until_their_row_which_names_its_input(client):
    sid = create_session(client, "agent")
    attach(client, sid)
    first = client.post(f"/api/remote/sessions/{sid}/messages",
                        json={"content": f"hi {SCRIPT}", "client_message_id": "c-1"})
    second = client.post(f"/api/remote/sessions/{sid}/messages",
                         json={"content": "then this", "client_message_id": "c-2"})
    ids = [r.get_json()["input"]["input_id"] for r in (first, second)]
    uuids = [input_uuid(sid, i) for i in ids]
    echo = json.dumps({"type": "user", "message": {"role": "user", "content": f"hi {SCRIPT}"},
                       "uuid": uuids[0], "isReplay": True})
    post_lines(client, sid, [cl.system_init(), echo])
    html = page(client, f"/sessions/{sid}")
    assert re.search(rf'<article class="bubble role-user" id="m-\d+" data-message-id="\d+"'
                     rf' data-input-uuid="{uuids[0]}">', html)
    (outgoing,) = re.findall(r'<article class="bubble role-user outgoing".*?</article>', html, re.S)
    assert (f'data-client-id="c-2" data-input-id="{ids[1]}" data-uuid="{uuids[1]}"'
            ' data-state="queued"') in outgoing
    assert '<div class="input-text">then this</div>' in outgoing
    assert SCRIPT not in html

    state = client.get(f"/sessions/{sid}/controls")
    assert state.headers["Cache-Control"] == "no-store"
    body = state.get_json()
    assert body["inputs"] == [{"input_id": ids[1], "client_message_id": "c-2",
                               "content": "then this", "state": "queued", "reason": None,
                               "uuid": uuids[1]}]
    assert (body["status"], body["controls"]["send"], body["note"]) == ("running", True, "")


@pytest.mark.parametrize("app_config", [{"AUTH_DISABLED": False}])
def test_a_signed_in_page_holds_the_csrf_token_its_posts_need(client, app):
    from app.db import writing
    from app.services import tokens
    from tests.api import bearer
    with app.app_context():
        alice = tokens.issue("user", "alice", writing())[1]
        bob = tokens.issue("user", "bob", writing())[1]
        runner = tokens.issue("runner", "m1", writing())[1]
    opened = client.post("/api/remote/sessions", json={"session_type": "agent", "user_id": "alice",
                                                       "machine": "m1"}, headers=bearer(runner))
    sid = opened.get_json()["session"]["session_id"]
    login = client.get("/login").get_data(as_text=True)
    form_token = re.search(r'name="csrf_token" value="([^"]+)"', login).group(1)
    assert client.post("/login", data={"token": alice, "next": "/sessions",
                                       "csrf_token": form_token}).status_code == 302
    html = page(client, f"/sessions/{sid}")
    token = re.search(r'data-csrf-token="([^"]+)"', html).group(1)
    body = {"content": "hello", "client_message_id": "c-1"}
    url = f"/api/remote/sessions/{sid}/messages"
    refused = client.post(url, json=body)
    assert refused.status_code == 400 and refused.get_json()["error"]["code"] == "csrf_failed"
    assert client.post(url, json=body, headers={"X-CSRF-Token": token}).status_code == 202
    assert client.get(f"/sessions/{sid}/controls").get_json()["inputs"][0]["client_message_id"] == "c-1"
    other = app.test_client()  # another user sees neither the controls nor the cards
    for path in (f"/sessions/{sid}/controls", f"/sessions/{sid}/permissions"):
        assert other.get(path, headers=bearer(bob)).status_code == 404, path
