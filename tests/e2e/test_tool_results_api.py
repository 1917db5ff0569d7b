"""GET .../messages?include=tool_results through the WSGI app (issue 32): each message with
its turn's tool calls and results, and the tool-only turns that wrote no row (`tool_turns`),
each on exactly one page, in its place."""
from pathlib import Path

import pytest

from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines

SAMPLE = Path(__file__).resolve().parents[2] / "app" / "samples" / "claude_session.jsonl"
SESSIONS = "/api/remote/sessions"


def demo_session(client):
    """The demo's session: a note, a text turn that ran Bash, a tool-only turn (Read), and
    a text turn after it."""
    sid = create_session(client, "agent", provider="claude")
    assert post_lines(client, sid, SAMPLE.read_text(encoding="utf-8").splitlines()).status_code == 200
    assert complete(client, sid).status_code == 200
    return sid


def page(client, sid, **query):
    response = client.get(f"{SESSIONS}/{sid}/messages", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_each_message_carries_its_results_and_the_tool_only_turn_follows_its_row(client):
    sid = demo_session(client)
    body = page(client, sid, include="tool_results")
    note, said, last = body["messages"]
    assert note["role"] == "system" and note["tool_results"] == last["tool_results"] == []
    [bash] = said["tool_results"]
    assert (bash["name"], bash["input"], bash["output"]) == ("Bash", {"command": "ls"},
                                                            "README.md\nsetup.cfg\napp\n")
    assert bash["tool_use_id"] in [b.get("id") for b in said["content_blocks"]]
    assert (bash["message_id"], bash["is_error"], bash["truncated"]) == (said["id"], False, False)
    [turn] = body["tool_turns"]
    assert turn["after_message_id"] == said["id"]
    [read] = turn["tool_results"]
    assert (read["name"], read["input"], read["output"]) == ("Read", {"file_path": "README.md"},
                                                            "# demo\n")
    assert read["message_id"] is None and body["tool_results_truncated"] is False
    # the transcript itself is as before: three rows, none for the Read turn
    session = client.get(f"{SESSIONS}/{sid}").get_json()["session"]
    assert (session["message_count"], session["conversation_turn_count"]) == (3, 3)


def test_without_include_a_page_is_as_before(client):
    sid = demo_session(client)
    body = page(client, sid)
    assert set(body) == {"messages", "next_cursor"}
    assert all("tool_results" not in m for m in body["messages"])


def test_a_tool_only_turn_comes_on_exactly_one_page_however_small_the_pages(client):
    sid = create_session(client, "agent", provider="claude")
    lines = [cl.assistant(cl.tool_use("toolu_a", "Read", {"file_path": "a"}), message_id="m1"),
             cl.tool_result("toolu_a", "A"), cl.result(),
             cl.assistant(cl.text("One."), message_id="m2"), cl.result(),
             cl.assistant(cl.tool_use("toolu_b", "Read", {"file_path": "b"}), message_id="m3"),
             cl.tool_result("toolu_b", "B"), cl.result(),
             cl.assistant(cl.text("Two."), message_id="m4"), cl.result(),
             cl.assistant(cl.tool_use("toolu_c", "Read", {"file_path": "c"}), message_id="m5"),
             cl.tool_result("toolu_c", "C"), cl.result()]
    assert post_lines(client, sid, lines).status_code == 200
    seen, after = [], None
    while True:
        body = page(client, sid, include="tool_results", limit=1,
                    **({"after": after} if after else {}))
        for turn in body["tool_turns"]:
            seen.append(("turn", turn["tool_results"][0]["output"]))
        for message in body["messages"]:
            seen.append(("row", message["content"]))
        after = body["next_cursor"]
        if after is None:
            break
    # a turn placed before a row comes on that row's page, ahead of it
    assert seen == [("turn", "A"), ("row", "One."), ("turn", "B"), ("row", "Two."), ("turn", "C")]


def test_outputs_past_the_page_budget_keep_their_calls_not_their_text(app, client):
    app.config["PAGE_MAX_BYTES"] = 3000
    sid = create_session(client, "agent", provider="claude")
    lines = [cl.assistant(cl.tool_use("toolu_a", "Read", {"file_path": "a"}), message_id="m1"),
             cl.tool_result("toolu_a", "A"), cl.assistant(cl.text("One."), message_id="m2"),
             cl.result(),
             cl.assistant(cl.tool_use("toolu_b", "Read", {"file_path": "b"}), message_id="m3"),
             cl.tool_result("toolu_b", "B" * 4000), cl.result()]
    assert post_lines(client, sid, lines).status_code == 200
    body = page(client, sid, include="tool_results")
    [said] = body["messages"]
    [small] = said["tool_results"]
    [big] = body["tool_turns"][0]["tool_results"]
    assert (small["output"], small["output_omitted"]) == ("A", False)
    assert (big["name"], big["output"], big["output_omitted"], big["output_bytes"]) == (
        "Read", "", True, 4000)


@pytest.mark.parametrize("query", [{"include": "tools"}, {"include": "tool_results,x"},
                                   {"include": "tool_results", "format": "openai"}])
def test_an_unknown_include_is_a_422_that_names_it(client, query):
    sid = demo_session(client)
    response = client.get(f"{SESSIONS}/{sid}/messages", query_string=query)
    assert response.status_code == 422
    error = response.get_json()["error"]
    assert error["code"] == "invalid_include" and error["details"]["include"] == query["include"]


def test_an_unknown_session_is_a_404_with_include_too(client):
    response = client.get(f"{SESSIONS}/nope/messages", query_string={"include": "tool_results"})
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"
