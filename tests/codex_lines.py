"""Builders for `codex exec --json` lines, so tests read like the streams they feed."""
import json


def thread_started(thread_id="0199a213-81c0-7800-8aa1-bbab2a035a53"):
    return json.dumps({"type": "thread.started", "thread_id": thread_id})


def turn_started():
    return json.dumps({"type": "turn.started"})


def turn_completed(input_tokens=10, output_tokens=5):
    return json.dumps({"type": "turn.completed",
                       "usage": {"input_tokens": input_tokens, "cached_input_tokens": 0,
                                 "output_tokens": output_tokens}})


def item(event, item_id, item_type, **fields):
    """`item.started` / `item.updated` / `item.completed` (event = the part after `item.`)."""
    return json.dumps({"type": f"item.{event}", "item": {"id": item_id, "type": item_type,
                                                         **fields}})


def command(event, item_id, command_line, output="", exit_code=None, status="in_progress"):
    return item(event, item_id, "command_execution", command=command_line,
                aggregated_output=output, exit_code=exit_code, status=status)


def todo_list(event, item_id, *done):
    """A todo list whose entries are named `step 1`, `step 2`, ...; `done` their states."""
    entries = [{"text": f"step {n}", "completed": state} for n, state in enumerate(done, 1)]
    return item(event, item_id, "todo_list", items=entries)


def message(item_id, text):
    return item("completed", item_id, "agent_message", text=text)
