"""Older Codex CLIs' `{"id", "msg"}` lines, read by the Codex parser."""
import json

import pytest

from app.providers.codex import parse_line
from app.transcript import event_types as ev


def legacy(**msg):
    return json.dumps({"id": "0", "msg": msg})


def test_an_agent_message_is_a_text_block_and_reasoning_a_reasoning_block():
    event = parse_line(legacy(type="agent_message", message="Done."))
    assert (event.kind, event.blocks) == (ev.ASSISTANT, ({"type": "text", "text": "Done."},))
    event = parse_line(legacy(type="agent_reasoning", text="**Thinking**"))
    assert event.blocks == ({"type": "reasoning", "text": "**Thinking**"},)


def test_a_command_is_a_tool_use_then_its_result_under_the_call_id():
    begin = parse_line(legacy(type="exec_command_begin", call_id="c1", command=["bash", "-lc", "ls -a"],
                              cwd="/repo"))
    assert begin.kind == ev.ASSISTANT
    assert begin.blocks == ({"type": "tool_use", "id": "c1", "name": "command_execution",
                             "input": {"command": "bash -lc 'ls -a'"}},)
    end = parse_line(legacy(type="exec_command_end", call_id="c1", stdout="out\n", stderr="err\n",
                            exit_code=2))
    assert end.kind == ev.TOOL_RESULTS
    assert end.blocks == ({"type": "tool_result", "tool_use_id": "c1", "content": "out\nerr\n",
                           "is_error": True},)
    ok = parse_line(legacy(type="exec_command_end", call_id="c1", aggregated_output="all", exit_code=0))
    assert ok.blocks[0]["content"] == "all" and ok.blocks[0]["is_error"] is False


def test_the_task_bounds_the_turn():
    assert parse_line(legacy(type="task_started", model_context_window=1)).kind == ev.TURN_STARTED
    done = parse_line(legacy(type="task_complete", last_agent_message="Done."))
    assert done.kind == ev.RESULT and done.info == {"subtype": "success", "is_error": False, "result": "Done."}
    aborted = parse_line(legacy(type="turn_aborted", reason="interrupted"))
    assert aborted.kind == ev.RESULT and aborted.info["is_error"] is True
    assert aborted.info["terminal_reason"].startswith("aborted")


@pytest.mark.parametrize("msg", [
    {"info": {"total_token_usage": {"input_tokens": 9, "output_tokens": 4, "cached_input_tokens": 2},
              "last_token_usage": {"input_tokens": 1, "output_tokens": 1}}},
    {"input_tokens": 9, "output_tokens": 4, "cached_input_tokens": 2, "model": True},
])
def test_token_count_is_the_running_total_of_the_turn(msg):
    event = parse_line(legacy(type="token_count", **msg))
    assert event.info["turn_usage"] == {"input_tokens": 9, "output_tokens": 4, "cached_input_tokens": 2}
    assert event.blocks == ()


def test_mcp_calls_patches_searches_and_plans_become_tool_blocks():
    call = {"server": "docs", "tool": "search", "arguments": {"q": "x"}}
    assert parse_line(legacy(type="mcp_tool_call_begin", call_id="m1", invocation=call)).blocks[0]["name"] == (
        "docs.search")
    failed = parse_line(legacy(type="mcp_tool_call_end", call_id="m1", invocation=call, result={"Err": "down"}))
    assert failed.blocks[0]["content"] == "down" and failed.blocks[0]["is_error"] is True
    patch = parse_line(legacy(type="patch_apply_begin", call_id="p1",
                              changes={"a.py": {"add": {"content": "x"}}, "b.py": {"delete": {}}}))
    assert patch.blocks[0]["input"] == {"changes": [{"path": "a.py", "kind": "add"},
                                                    {"path": "b.py", "kind": "delete"}]}
    assert parse_line(legacy(type="patch_apply_end", call_id="p1", success=False)).blocks[0]["is_error"] is True
    assert parse_line(legacy(type="web_search_end", call_id="w1", query="q")).blocks[0]["input"] == {"query": "q"}
    plan = parse_line(legacy(type="plan_update", plan=[{"step": "a", "status": "pending"}]))
    assert plan.blocks[0]["name"] == "update_plan"


def test_the_configuration_line_and_session_configured_are_init_notes():
    first = parse_line(json.dumps({"workdir": "/repo", "model": "codex-mini-latest", "sandbox": "read-only"}))
    assert (first.kind, first.text) == (ev.SYSTEM, "Session started: model=codex-mini-latest, cwd=/repo")
    configured = parse_line(legacy(type="session_configured", session_id="abc", model="o4-mini"))
    assert configured.text == "Session started: model=o4-mini, session=abc"
    note = parse_line(legacy(type="stream_error", message="retrying"))
    assert (note.kind, note.text) == (ev.SYSTEM, "retrying")


@pytest.mark.parametrize("msg", [
    {"type": "exec_command_end"}, {"type": "exec_command_begin", "command": [1, None]},
    {"type": "mcp_tool_call_end", "result": "x"}, {"type": "patch_apply_begin", "changes": []},
    {"type": "token_count", "info": []}, {"type": "plan_update", "plan": "x"},
])
def test_odd_legacy_lines_never_raise(msg):
    parse_line(json.dumps({"id": 1, "msg": msg}))
