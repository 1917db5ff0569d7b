"""Line parsing: what each kind of stdout line means, and that junk never raises."""
import json

import pytest

from app.services import stream_events as ev
from tests import claude_lines as cl


def test_assistant_line_keeps_blocks_uuid_and_message_id():
    event = ev.parse_line(cl.assistant(cl.thinking("hm"), cl.text("Hi"), cl.tool_use("t1"),
                                       message_id="msg_7", uuid="a-1"))
    assert event.kind == ev.ASSISTANT
    assert [b["type"] for b in event.blocks] == ["thinking", "text", "tool_use"]
    assert (event.identity, event.message_id) == ("a-1", "msg_7")


def test_redacted_thinking_is_kept_opaque():
    line = cl.assistant({"type": "redacted_thinking", "data": "EmwK"})
    assert ev.parse_line(line).blocks == ({"type": "redacted_thinking", "data": "EmwK"},)


def test_empty_text_blocks_and_unknown_blocks_are_dropped():
    line = cl.assistant(cl.text(""), {"type": "mystery", "x": 1}, cl.text("kept"))
    assert ev.parse_line(line).blocks == ({"type": "text", "text": "kept"},)


def test_user_tool_results_are_normalised():
    event = ev.parse_line(cl.tool_result("t1", "out", is_error=True, uuid="u-1"))
    assert event.kind == ev.TOOL_RESULTS
    assert event.blocks == ({"type": "tool_result", "tool_use_id": "t1", "content": "out",
                             "is_error": True},)


def test_user_prompt_echo_is_ignored():
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}})
    assert ev.parse_line(line).kind == ev.IGNORED


def test_result_keeps_outcome_fields():
    event = ev.parse_line(cl.result("error_max_turns", True, "too long", uuid="r-1"))
    assert event.kind == ev.RESULT and event.identity == "r-1"
    assert event.info["subtype"] == "error_max_turns"
    assert event.info["is_error"] is True and event.info["result"] == "too long"


def test_system_init_is_summarised():
    event = ev.parse_line(cl.system_init(uuid="s-1"))
    assert event.kind == ev.SYSTEM
    assert event.text == "Session started: model=claude-sonnet-4-5, cwd=/repo, tools=2, mcp_servers=0"


def test_system_line_without_words_summarises_to_empty():
    assert ev.parse_line('{"type": "system", "subtype": "hook_started"}').text == ""


def test_openai_message_with_string_list_and_tool_calls():
    assert ev.parse_line(cl.openai_message("plain")).blocks == ({"type": "text", "text": "plain"},)
    parts = [{"type": "output_text", "text": "a"}, {"type": "text", "text": "b"}]
    assert [b["text"] for b in ev.parse_line(cl.openai_message(parts)).blocks] == ["a", "b"]
    line = json.dumps({"type": "message", "role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "Bash", "arguments": "{\"command\": \"ls\"}"}}]})
    assert ev.parse_line(line).blocks == (
        {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "ls"}},)


@pytest.mark.parametrize("line", [
    "", "not json", "[1, 2]", "42", "null", '{"type": "rate_limit_event"}', '{"no_type": 1}',
    '{"type": "assistant"}', '{"type": "assistant", "message": {"content": 7}}',
    '{"type": "message", "role": "user", "content": "x"}', '{"type": "user", "message": 3}',
])
def test_junk_lines_never_raise_and_carry_nothing(line):
    event = ev.parse_line(line)
    assert event.blocks == ()
    assert event.kind in (ev.IGNORED, ev.ASSISTANT)
