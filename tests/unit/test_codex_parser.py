"""The `codex exec --json` parser: each line on its own, no database."""
import json
import random

import pytest

from app.providers.codex import parse_line
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import IGNORED
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TURN_STARTED
from app.transcript.event_types import StreamEvent


def completed(**item):
    return json.dumps({"type": "item.completed", "item": item})


def item_line(kind, **item):
    return json.dumps({"type": kind, "item": item})


def test_agent_message_is_a_text_block():
    event = parse_line(completed(id="item_3", type="agent_message", text="Yep."))
    assert event.kind == ASSISTANT
    assert event.blocks == ({"type": "text", "text": "Yep."},)


def test_legacy_assistant_message_item_is_read_too():
    event = parse_line(completed(id="item_3", item_type="assistant_message", text="Old."))
    assert event.blocks == ({"type": "text", "text": "Old."},)


def test_reasoning_is_a_reasoning_block():
    event = parse_line(completed(id="item_0", type="reasoning", text="**Planning**"))
    assert event.blocks == ({"type": "reasoning", "text": "**Planning**"},)


@pytest.mark.parametrize("exit_code, status, is_error", [
    (0, "completed", False), (1, "completed", True), (None, "failed", True),
    (None, "declined", True),
])
def test_command_execution_is_a_tool_use_and_its_result(exit_code, status, is_error):
    event = parse_line(completed(id="item_1", type="command_execution", command="bash -lc ls",
                                 aggregated_output="README.md\n", exit_code=exit_code,
                                 status=status))
    assert event.blocks == (
        {"type": "tool_use", "id": "item_1", "name": "command_execution",
         "input": {"command": "bash -lc ls"}},
        {"type": "tool_result", "tool_use_id": "item_1", "content": "README.md\n",
         "is_error": is_error},
    )


def test_file_change_web_search_and_todo_list_are_tool_uses():
    changes = [{"path": "a.py", "kind": "update"}]
    todo = [{"text": "x", "completed": False}]
    cases = [
        (completed(id="i1", type="file_change", changes=changes, status="completed"),
         "file_change", {"changes": changes}),
        (completed(id="i2", type="web_search", query="sse flask"), "web_search",
         {"query": "sse flask"}),
        (completed(id="i3", type="todo_list", items=todo), "todo_list", {"items": todo}),
    ]
    for line, name, tool_input in cases:
        (block,) = parse_line(line).blocks
        assert (block["type"], block["name"], block["input"]) == ("tool_use", name, tool_input)


def test_mcp_tool_call_names_server_and_tool_and_reports_its_result_or_error():
    content = [{"type": "text", "text": "2 issues"}]
    ok = parse_line(completed(id="i4", type="mcp_tool_call", server="github", tool="search",
                              arguments={"q": "sse"}, result={"content": content},
                              status="completed"))
    use, result = ok.blocks
    assert (use["name"], use["input"]) == ("github.search", {"q": "sse"})
    assert (result["content"], result["is_error"]) == (content, False)
    failed = parse_line(completed(id="i5", type="mcp_tool_call", server="github", tool="search",
                                  arguments={}, error={"message": "denied"}, status="failed"))
    assert failed.blocks[1]["content"] == "denied" and failed.blocks[1]["is_error"] is True


def test_error_item_and_stream_error_are_system_notes():
    item = parse_line(completed(id="item_9", type="error", message="Reconnecting... 1/5"))
    top = parse_line('{"type": "error", "message": "stream error: 429"}')
    assert (item.kind, item.text) == (SYSTEM, "Reconnecting... 1/5")
    assert (top.kind, top.text, top.identity) == (SYSTEM, "stream error: 429", None)


def test_thread_started_is_a_note_named_by_the_thread():
    event = parse_line('{"type": "thread.started", "thread_id": "0199a213"}')
    assert (event.kind, event.text) == (SYSTEM, "Session started: thread=0199a213")
    assert event.identity == "codex:thread:0199a213"
    assert event.info["thread_id"] == "0199a213"  # a new thread's total starts from nothing


def test_turn_completed_and_failed_close_the_turn():
    done = parse_line('{"type": "turn.completed", "usage": {"input_tokens": 5, '
                      '"cached_input_tokens": 2, "output_tokens": 3}}')
    assert done.kind == RESULT and done.identity is None
    # the thread's running total, as exec reports it: the accumulator takes the turn's step
    assert done.info == {"subtype": "success", "is_error": False,
                         "thread_usage": {"input_tokens": 5, "cached_input_tokens": 2,
                                          "output_tokens": 3}}
    failed = parse_line('{"type": "turn.failed", "error": {"message": "429"}}')
    assert failed.info == {"subtype": "error", "is_error": True, "result": "429"}


@pytest.mark.parametrize("kind", ["item.started", "item.updated", "item.completed"])
def test_every_state_of_an_item_is_read_under_its_item_id(kind):
    event = parse_line(item_line(kind, id="item_1", type="agent_message", text="partial"))
    assert event.kind == ASSISTANT and event.item_id == "item_1"
    assert event.blocks == ({"type": "text", "text": "partial"},)
    assert event.item_done is (kind == "item.completed")


@pytest.mark.parametrize("kind", ["item.started", "item.updated"])
def test_a_command_in_progress_has_no_result_yet(kind):
    event = parse_line(item_line(kind, id="item_2", type="command_execution", command="make",
                                 aggregated_output="building", exit_code=None,
                                 status="in_progress"))
    assert event.blocks == ({"type": "tool_use", "id": "item_2", "name": "command_execution",
                             "input": {"command": "make"}},)


def test_an_mcp_call_in_progress_has_no_result_yet():
    event = parse_line(item_line("item.started", id="i4", type="mcp_tool_call", server="gh",
                                 tool="search", arguments={"q": "x"}, result=None, error=None,
                                 status="in_progress"))
    assert [b["type"] for b in event.blocks] == ["tool_use"]


def test_an_empty_item_still_holds_its_place():
    event = parse_line(item_line("item.started", id="item_5", type="agent_message", text=""))
    assert (event.kind, event.blocks, event.item_id) == (ASSISTANT, (), "item_5")


def test_an_error_item_is_noted_once_when_completed():
    assert parse_line(item_line("item.started", id="e", type="error", message="x")).kind == IGNORED
    assert parse_line(item_line("item.completed", id="e", type="error", message="x")).kind == SYSTEM


def test_turn_started_opens_a_new_scope_for_item_ids():
    assert parse_line('{"type": "turn.started"}').kind == TURN_STARTED


def test_items_carry_no_identity_so_a_later_identical_run_is_not_dropped():
    # item ids restart with every `codex exec` run, and a later run may print the
    # very same line: only its place in the buffer tells the two apart
    line = completed(id="item_0", type="agent_message", text="Done.")
    assert parse_line(line).identity is None


@pytest.mark.parametrize("line", [
    "", "not json", "[]", "null", '"text"', '{"type": 7}',
    '{"type": "item.plan.delta", "item_id": "i", "delta": "x"}',
    '{"type": "request_user_input", "id": "r", "call_id": "c", "questions": []}',
    '{"type": "item.completed"}', '{"type": "item.completed", "item": []}',
    '{"type": "item.completed", "item": {"type": "collab_tool_call"}}',
    '{"type": "item.completed", "item": {"type": "agent_message", "text": ""}}',
    '{"type": "item.updated", "item": {"id": "i", "type": "plan_update"}}',
    '{"type": "item.completed", "item": {"id": ["x"], "type": {"a": 1}}}',
    '{"id": "1", "msg": {"type": "agent_message_delta", "delta": "legacy, streamed"}}',
    '{"id": "1", "msg": []}', '{"id": "1", "msg": {"type": 3}}', '{"prompt": "the echo"}',
    '{"id": "1", "msg": {"type": "agent_message", "message": ""}}', '{"model": 5}',
])
def test_junk_and_unknown_lines_are_ignored(line):
    assert parse_line(line).kind == IGNORED


@pytest.mark.parametrize("line", [
    '{"type": "item.completed", "item": {"id": 5, "type": "command_execution", "exit_code": "x"}}',
    '{"type": "item.completed", "item": {"id": "i", "type": "mcp_tool_call", "error": "no"}}',
    '{"type": "item.completed", "item": {"id": "i", "type": "error", "message": 3}}',
    '{"type": "turn.failed", "error": "boom"}', '{"type": "turn.completed", "usage": 1}',
    '{"type": "thread.started", "thread_id": null}', '{"type": "error"}',
    '{"type": "item.completed", "item": {"id": "i", "type": "file_change", "changes": "x"}}',
    '{"type": "item.completed", "item": {"id": "\\ud800", "type": "reasoning", "text": "a"}}',
])
def test_odd_known_lines_never_raise(line):
    assert isinstance(parse_line(line), StreamEvent)


def test_random_objects_of_known_shapes_never_raise():
    rng = random.Random(5150)
    types = ["thread.started", "turn.started", "turn.completed", "turn.failed",
             "item.started", "item.updated", "item.completed", "error"]
    item_types = ["agent_message", "reasoning", "command_execution", "file_change",
                  "mcp_tool_call", "web_search", "todo_list", "error", "plan"]
    values = [None, True, 0, -1, "", "x", [], {}, [1], {"message": 2}, {"content": "y"}]
    keys = ["id", "text", "command", "aggregated_output", "exit_code", "status", "changes",
            "server", "tool", "arguments", "result", "error", "query", "items", "message"]
    for _ in range(3000):
        item = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 6))}
        item["type"] = rng.choice(item_types + [rng.choice(values)])
        obj = {"type": rng.choice(types), "item": rng.choice([item, rng.choice(values)]),
               rng.choice(["usage", "error", "thread_id", "message"]): rng.choice(values)}
        assert isinstance(parse_line(json.dumps(obj)), StreamEvent)
