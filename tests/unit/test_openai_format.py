"""Transcript rows as OpenAI chat messages."""
import json

from app.core.records import Message
from app.formats.openai_format import to_openai_messages


def message(role, content, blocks=()):
    return Message(1, "s", role, content, list(blocks), {}, "remote_live", "k", "t")


def test_assistant_tool_use_becomes_tool_calls_and_results_tool_messages():
    blocks = [
        {"type": "thinking", "thinking": "hidden"},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": [{"type": "text", "text": "README.md"}], "is_error": False},
    ]
    out = to_openai_messages([message("system", "Session started"),
                              message("assistant", "Looking", blocks)])
    assert out[0] == {"role": "system", "content": "Session started"}
    assert out[1]["role"] == "assistant" and out[1]["content"] == "Looking"
    [call] = out[1]["tool_calls"]
    assert call["id"] == "toolu_1" and call["type"] == "function"
    assert json.loads(call["function"]["arguments"]) == {"command": "ls"}
    assert out[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "README.md"}
    assert len(out) == 3


def test_tool_only_evidence_row_has_null_content():
    blocks = [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]
    [entry] = to_openai_messages([message("assistant", "", blocks)])
    assert entry["content"] is None and entry["tool_calls"][0]["function"]["name"] == "Read"


def test_thinking_only_row_yields_nothing():
    assert to_openai_messages([message("assistant", "", [{"type": "thinking"}])]) == []
