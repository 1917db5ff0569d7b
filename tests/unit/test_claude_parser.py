"""Claude line parsing: what each kind of stdout line means, and that junk never raises."""
import json
import random

import pytest

from app.providers.claude import parse_line
from app.providers.json_depth import MAX_DEPTH
from app.transcript import event_types as ev
from tests import claude_lines as cl


def test_assistant_line_keeps_blocks_uuid_and_message_id():
    event = parse_line(cl.assistant(cl.thinking("hm"), cl.text("Hi"), cl.tool_use("t1"),
                                       message_id="msg_7", uuid="a-1"))
    assert event.kind == ev.ASSISTANT
    assert [b["type"] for b in event.blocks] == ["thinking", "text", "tool_use"]
    assert (event.identity, event.message_id) == ("a-1", "msg_7")


def test_redacted_thinking_is_kept_opaque():
    line = cl.assistant({"type": "redacted_thinking", "data": "EmwK"})
    assert parse_line(line).blocks == ({"type": "redacted_thinking", "data": "EmwK"},)


def test_empty_text_blocks_and_unknown_blocks_are_dropped():
    line = cl.assistant(cl.text(""), {"type": "mystery", "x": 1}, cl.text("kept"))
    assert parse_line(line).blocks == ({"type": "text", "text": "kept"},)


def test_user_tool_results_are_normalised():
    event = parse_line(cl.tool_result("t1", "out", is_error=True, uuid="u-1"))
    assert event.kind == ev.TOOL_RESULTS
    assert event.blocks == ({"type": "tool_result", "tool_use_id": "t1", "content": "out",
                             "is_error": True},)


def test_user_prompt_echo_is_ignored():
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "hello"}})
    assert parse_line(line).kind == ev.IGNORED


def test_result_keeps_outcome_fields():
    event = parse_line(cl.result("error_max_turns", True, "too long", uuid="r-1"))
    assert event.kind == ev.RESULT and event.identity == "r-1"
    assert event.info["subtype"] == "error_max_turns"
    assert event.info["is_error"] is True and event.info["result"] == "too long"


def test_result_keeps_its_token_usage_counts_only():
    usage = {"input_tokens": 18, "output_tokens": 85, "cache_read_input_tokens": 8800,
             "cache_creation_input_tokens": 800, "service_tier": "standard", "server_tool_use": {}}
    assert parse_line(cl.result(usage=usage)).info["usage"] == {
        key: usage[key] for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                    "cache_creation_input_tokens")}
    assert "usage" not in parse_line(cl.result(usage=None)).info


def test_message_delta_reports_its_final_usage():
    event = parse_line(cl.message_delta({"output_tokens": 99, "input_tokens": True}))
    assert event.kind == ev.IGNORED
    assert event.info["message_usage"] == {"output_tokens": 99}
    assert "message_usage" not in parse_line(cl.message_start("m1")).info


def test_system_init_is_summarised():
    event = parse_line(cl.system_init(uuid="s-1"))
    assert event.kind == ev.SYSTEM
    assert event.text == "Session started: model=claude-sonnet-4-5, cwd=/repo, tools=2, mcp_servers=0"


def test_system_line_without_words_summarises_to_empty():
    assert parse_line('{"type": "system", "subtype": "hook_started"}').text == ""


def test_openai_message_with_string_list_and_tool_calls():
    assert parse_line(cl.openai_message("plain")).blocks == ({"type": "text", "text": "plain"},)
    parts = [{"type": "output_text", "text": "a"}, {"type": "text", "text": "b"}]
    assert [b["text"] for b in parse_line(cl.openai_message(parts)).blocks] == ["a", "b"]
    line = json.dumps({"type": "message", "role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "Bash", "arguments": "{\"command\": \"ls\"}"}}]})
    assert parse_line(line).blocks == (
        {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "ls"}},)


@pytest.mark.parametrize("line", [
    "", "not json", "[1, 2]", "42", "null", '{"type": "rate_limit_event"}', '{"no_type": 1}',
    '{"type": "assistant"}', '{"type": "assistant", "message": {"content": 7}}',
    '{"type": "message", "role": "user", "content": "x"}', '{"type": "user", "message": 3}',
])
def test_junk_lines_never_raise_and_carry_nothing(line):
    event = parse_line(line)
    assert event.blocks == ()
    assert event.kind in (ev.IGNORED, ev.ASSISTANT)


@pytest.mark.parametrize("line", [
    "[" * 50000,
    "{\"a\": " * 50000,
    "[" * 50000 + "]" * 50000,
    '{"type": "assistant", "message": {"content": ' + "[" * 5000 + "]" * 5000 + "}}",
])
def test_deeply_nested_lines_are_ignored_not_raised(line):
    event = parse_line(line)
    assert event.kind == ev.IGNORED
    assert event.info["reason"] in ("too_deep", "not_json")
    assert event.blocks == ()


def test_nesting_deeper_than_max_depth_is_ignored():
    depth = MAX_DEPTH + 10
    tool_input = json.loads("[" * depth + "]" * depth)
    event = parse_line(cl.assistant(cl.tool_use("t1", tool_input=tool_input)))
    assert event.kind == ev.IGNORED and event.info["reason"] == "too_deep"


def test_reasonable_nesting_is_kept():
    tool_input = {"a": [[{"b": [1, [2, [3]]]}]]}
    event = parse_line(cl.assistant(cl.tool_use("t1", tool_input=tool_input)))
    assert event.kind == ev.ASSISTANT
    assert event.blocks[0]["input"] == tool_input


TOO_DEEP = MAX_DEPTH + 5


@pytest.mark.parametrize("arguments", ["[" * 50000, "[" * TOO_DEEP + "]" * TOO_DEEP])
def test_deeply_nested_openai_tool_arguments_are_kept_raw(arguments):
    call = {"id": "call_1", "type": "function",
            "function": {"name": "Bash", "arguments": arguments}}
    line = json.dumps({"type": "message", "role": "assistant", "content": None,
                       "tool_calls": [call]})
    (block,) = parse_line(line).blocks
    assert block["input"] == {"raw_arguments": arguments}


@pytest.mark.parametrize("line", [
    '{"type": []}', '{"type": {}}', '{"type": 1.5}', "\ud800", '"\\ud800"', "1e999",
    "9" * 5000, '{"type": "message", "role": "assistant", "tool_calls": [1, {"function": 2}]}',
    '{"type": "user", "message": {"content": [1, {"type": "tool_result"}]}}',
])
def test_odd_lines_never_raise(line):
    assert isinstance(parse_line(line), ev.StreamEvent)


def test_lone_surrogates_in_decoded_strings_become_replacement_characters():
    tool = cl.tool_use("t\udfff", tool_input={"k\ud800": ["\udc00"]})
    line = cl.assistant(cl.text("a\ud800b"), tool)
    assert "\\ud800" in line  # the JSON line itself is valid: the escapes are legal there
    text_block, tool_block = parse_line(line).blocks
    assert text_block["text"] == "a\ufffdb"
    assert tool_block["id"] == "t\ufffd"
    assert tool_block["input"] == {"k\ufffd": ["\ufffd"]}


def test_surrogate_pairs_stay_whole():
    event = parse_line(cl.assistant(cl.text("smile \U0001F600")))
    assert event.blocks[0]["text"] == "smile \U0001F600"


def test_random_json_fragments_never_raise():
    rng = random.Random(1234)
    alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\\\ud800', '"type"', '"assistant"',
                '"message"', '"content"', '"user"', '"result"', '"system"', '1', 'null', ' ']
    for _ in range(2000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert isinstance(parse_line(line), ev.StreamEvent)


KEYS = ["type", "message", "content", "role", "tool_calls", "function", "arguments", "uuid",
        "id", "subtype", "text", "result", "is_error", "tool_use_id", "model", "tools", "cwd"]
KINDS = ["assistant", "user", "result", "system", "message", "text", "tool_use", "tool_result",
         "output_text", "init", "thinking"]


def random_json(rng, depth=0):
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice([None, True, 0, -1, 1.5, "", "x", "\ud800", rng.choice(KINDS), "[[["])
    if roll < 0.6:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(KEYS): random_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_random_objects_of_known_shapes_never_raise():
    rng = random.Random(4321)
    for _ in range(3000):
        obj = random_json(rng, 1)
        if isinstance(obj, dict):
            obj.setdefault("type", rng.choice(KINDS))
        assert isinstance(parse_line(json.dumps(obj)), ev.StreamEvent)


def test_compact_boundary_is_summarised():
    event = parse_line(json.dumps({"type": "system", "subtype": "compact_boundary"}))
    assert (event.kind, event.text) == (ev.SYSTEM, "Conversation compacted")


def test_an_assistant_line_without_a_uuid_is_named_by_its_message_and_content():
    def line(text_value, message_id="msg_1"):
        obj = json.loads(cl.assistant(cl.text(text_value), message_id=message_id))
        del obj["uuid"]
        return json.dumps(obj)
    names = [parse_line(raw).identity for raw in (line("a"), line("a"), line("b"), line("a", "msg_2"))]
    assert names[0] == names[1] and len(set(names)) == 3
    assert names[0].startswith("claude:msg_1:")


def test_a_sub_agents_blocks_keep_the_task_call_that_started_it():
    line = json.loads(cl.assistant(cl.text("found"), cl.tool_use("toolu_S")))
    line["parent_tool_use_id"] = "toolu_T"
    event = parse_line(json.dumps(line))
    assert [b["parent_tool_use_id"] for b in event.blocks] == ["toolu_T", "toolu_T"]
    result = json.loads(cl.tool_result("toolu_S"))
    result["parent_tool_use_id"] = "toolu_T"
    assert parse_line(json.dumps(result)).blocks[0]["parent_tool_use_id"] == "toolu_T"
    main = parse_line(cl.assistant(cl.text("mine")))  # parent_tool_use_id null
    assert "parent_tool_use_id" not in main.blocks[0]
