"""Every page of messages has a byte budget as well as a count (issue 29): GET of a
session, .../messages, the viewer's first page and its fragments stop at
PAGE_MAX_BYTES (rows as stored) and say how to go on, as a page cut by count does."""
import pytest

from app.core.records import fitting
from tests import claude_lines as cl
from tests.api import create_session
from tests.api import post_lines

ROW_TEXT = 20_000  # each turn's text; a stored row holds it about three times
BUDGET = 100_000  # about one and a half rows


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "PAGE_MAX_BYTES": BUDGET, "VIEWER_PAGE_BYTES": BUDGET}


def big_session(client, turns=5):
    sid = create_session(client, "agent")
    lines = []
    for n in range(turns):
        lines += [cl.assistant(cl.text(f"turn {n} " + "w" * ROW_TEXT)), cl.result()]
    assert post_lines(client, sid, lines).status_code == 200
    return sid


def test_a_session_stops_at_the_budget_and_its_cursor_reads_the_rest(client):
    sid = big_session(client)
    session = client.get(f"/api/remote/sessions/{sid}").get_json()["session"]
    assert len(session["messages"]) == 1 and session["messages_truncated"] is True
    assert session["message_count"] == 5
    seen, cursor = [m["content"][:6] for m in session["messages"]], session["next_cursor"]
    while cursor:
        page = client.get(f"/api/remote/sessions/{sid}/messages?after={cursor}&limit=1000")
        body = page.get_json()
        assert len(page.get_data()) < BUDGET + 2 * ROW_TEXT  # a page passes it by one row at most
        seen += [m["content"][:6] for m in body["messages"]]
        cursor = body["next_cursor"]
    assert seen == [f"turn {n}" for n in range(5)]  # every row once, in order


def test_a_row_bigger_than_the_budget_still_comes_alone(client, app):
    app.config["PAGE_MAX_BYTES"] = 10
    sid = big_session(client, turns=2)
    first = client.get(f"/api/remote/sessions/{sid}/messages?limit=1000").get_json()
    assert [m["content"][:6] for m in first["messages"]] == ["turn 0"]
    second = client.get(f"/api/remote/sessions/{sid}/messages?after={first['next_cursor']}").get_json()
    assert [m["content"][:6] for m in second["messages"]] == ["turn 1"]


def test_the_viewer_pages_stop_at_the_budget_too(client):
    sid = big_session(client)
    page = client.get(f"/sessions/{sid}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "turn 4" in html and "turn 3" not in html  # the newest row only
    older = client.get(f"/sessions/{sid}/bubbles?before=999999999")
    assert older.headers.get("X-Prev-Cursor")


def test_the_viewer_has_a_budget_of_its_own_below_the_apis(client, app):
    app.config["PAGE_MAX_BYTES"] = 100 * BUDGET  # the viewer keeps BUDGET: about one row
    sid = big_session(client)
    html = client.get(f"/sessions/{sid}").get_data(as_text=True)
    assert "turn 4" in html and "turn 3" not in html  # the newest row only
    session = client.get(f"/api/remote/sessions/{sid}").get_json()["session"]
    assert len(session["messages"]) == 5  # the API's budget holds them all
    after = client.get(f"/sessions/{sid}/bubbles?after=0")
    assert after.headers.get("X-Next-Cursor") and "turn 0" in after.get_data(as_text=True)
    assert "turn 1" not in after.get_data(as_text=True)


def test_fitting_keeps_the_first_and_stops_before_the_row_that_passes():
    assert fitting([5, 5, 5], 10) == 2
    assert fitting([50, 5], 10) == 1
    assert fitting([5, 5, 5], 0) == 3
    assert fitting([], 10) == 0


@pytest.mark.parametrize("fmt", ["json", "markdown", "openai"])
def test_an_export_streams_every_message_a_page_at_a_time(client, fmt):
    sid = big_session(client)
    response = client.get(f"/api/remote/sessions/{sid}/export?format={fmt}")
    assert response.status_code == 200 and response.is_streamed
    text = response.get_data(as_text=True)
    assert [n for n in range(5) if f"turn {n} " in text] == [0, 1, 2, 3, 4]
    if fmt == "json":
        session = response.get_json()["session"]
        assert [m["content"][:6] for m in session["messages"]] == [f"turn {n}" for n in range(5)]
        assert session["messages_truncated"] is False and session["next_cursor"] is None
    elif fmt == "openai":
        assert [m["content"][:6] for m in response.get_json()] == [f"turn {n}" for n in range(5)]
    else:
        assert text.endswith("w\n") and not text.endswith("\n\n")


def test_the_openai_messages_stream_whole(client):
    sid = big_session(client)
    response = client.get(f"/api/remote/sessions/{sid}/messages?format=openai")
    assert response.is_streamed
    assert [m["content"][:6] for m in response.get_json()["messages"]] == [f"turn {n}" for n in range(5)]


def test_evidence_pages_stop_at_the_budget(client, app):
    app.config["PAGE_MAX_BYTES"] = 20_000
    sid = create_session(client, "agent")
    lines = []
    for n in range(4):
        lines += [cl.assistant(cl.tool_use(f"b{n}", "Bash", {"command": f"cmd{n}"})),
                  cl.tool_result(f"b{n}", content="o" * 9000)]  # 8 KiB kept of each
    assert post_lines(client, sid, [*lines, cl.result()]).status_code == 200
    seen, after = [], ""
    while True:
        body = client.get(f"/api/remote/sessions/{sid}/evidence?limit=1000{after}").get_json()
        assert 1 <= len(body["evidence"]) <= 2
        seen += [item["command"] for item in body["evidence"]]
        if not body["next_cursor"]:
            break
        after = f"&after={body['next_cursor']}"
    assert seen == ["cmd0", "cmd1", "cmd2", "cmd3"]
