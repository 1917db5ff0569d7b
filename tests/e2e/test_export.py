"""GET /api/remote/sessions/<id>/export in each format, through the test client."""
import json

import pytest

from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines


@pytest.fixture
def session_id(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf-export"})
    post_lines(client, sid, [
        cl.system_init(),
        cl.assistant(cl.thinking("Which files?\nLet me look."), cl.text("Looking."),
                     cl.tool_use("toolu_1", "Bash", {"command": "ls ```"})),
        cl.tool_result("toolu_1", content="README.md\n```\n<script>x</script>"),
        cl.assistant(cl.text("Found **it**. <b>ok</b>"), cl.tool_use("toolu_2", "Read")),
        cl.result(),
    ])
    complete(client, sid)
    return sid


def export(client, sid, fmt):
    return client.get(f"/api/remote/sessions/{sid}/export?format={fmt}")


def test_json_is_the_session_payload_with_blocks(client, session_id):
    response = export(client, session_id, "json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert "attachment" in response.headers["Content-Disposition"]
    assert response.get_json() == {"session": get_session(client, session_id)}
    blocks = response.get_json()["session"]["messages"][1]["content_blocks"]
    assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use", "tool_result", "text",
                                           "tool_use"]


def test_openai_is_the_openai_message_list(client, session_id):
    response = export(client, session_id, "openai")
    assert response.status_code == 200
    body = response.get_json()
    expected = client.get(f"/api/remote/sessions/{session_id}/messages?format=openai")
    assert body == expected.get_json()["messages"]
    assert [m["role"] for m in body] == ["system", "assistant", "tool"]
    assert [c["function"]["name"] for c in body[1]["tool_calls"]] == ["Bash", "Read"]


def test_markdown_is_a_readable_attachment(client, session_id):
    response = export(client, session_id, "markdown")
    assert response.status_code == 200
    assert response.mimetype == "text/markdown"
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="turnlog-{session_id}.md"')
    doc = response.get_data(as_text=True)
    assert doc.startswith(f"# Session {session_id}\n")
    assert "- Type: workflow" in doc and "- Status: completed" in doc
    messages = get_session(client, session_id)["messages"]
    assert f"## System · {messages[0]['timestamp']}" in doc
    assert f"## Assistant · {messages[1]['timestamp']}" in doc
    assert doc.count("Looking.") == 1 and doc.count("Found **it**. <b>ok</b>") == 1  # as-is
    # In arrival order: text, the call, its result, the next text, the next call.
    order = ["Looking.", "**Tool call: Bash**", "**Tool result** (`toolu_1`)",
             "Found **it**.", "**Tool call: Read**"]
    assert [doc.index(part) for part in order] == sorted(doc.index(part) for part in order)
    assert "text block" not in doc
    assert "**Tool call: Bash** (`toolu_1`)" in doc and "**Tool call: Read**" in doc
    assert "````json\n" + json.dumps({"command": "ls ```"}, indent=2) + "\n````" in doc
    assert "````text\nREADME.md\n```\n<script>x</script>\n````" in doc
    assert "> _Thinking_\n>\n> Which files?\n> Let me look." in doc


def test_an_empty_session_exports_a_title_only(client):
    sid = create_session(client, "chat")
    doc = export(client, sid, "markdown").get_data(as_text=True)
    assert doc.startswith(f"# Session {sid}\n") and "## " not in doc


def test_a_bad_format_is_a_422(client, session_id):
    response = export(client, session_id, "pdf")
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == "invalid_format"


def test_an_unknown_session_is_a_404(client):
    response = export(client, "nope", "markdown")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"


def test_a_sub_agents_blocks_keep_their_task_call_in_every_export(client):
    from pathlib import Path
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "streams" / "claude" / "subagent.jsonl"
    sid = create_session(client, "workflow", {"workflow_id": "wf-export"})
    post_lines(client, sid, fixture.read_text().splitlines())
    complete(client, sid)
    blocks = export(client, sid, "json").get_json()["session"]["messages"][1]["content_blocks"]
    marked = [(b["type"], b.get("id") or b.get("tool_use_id")) for b in blocks if b.get("parent_tool_use_id")]
    assert marked == [("tool_use", "toolu_S1"), ("tool_result", "toolu_S1"), ("text", None)]
    assert {b["parent_tool_use_id"] for b in blocks if "parent_tool_use_id" in b} == {"toolu_T1"}
    markdown = export(client, sid, "markdown").get_data(as_text=True)
    assert markdown.count("_Sub-agent of `toolu_T1`:_") == 3
    assert markdown.index("**Tool call: Task**") < markdown.index("_Sub-agent of `toolu_T1`:_")
