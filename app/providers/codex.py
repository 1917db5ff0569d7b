"""OpenAI Codex CLI `codex exec --json` lines as `StreamEvent`s.

An item is reported as it evolves: `item.started`, any number of `item.updated`,
`item.completed`, each line carrying the item's whole current state. Every one
of them becomes an event with the item's blocks and its `item_id`, and the
accumulator keeps one place per item id within a turn, holding the last state
(see `TurnBuffer.restate_item`); `item.completed` is the final one. `turn.started`
opens a fresh scope for item ids, which restart (`item_0`, ...) with every
`codex exec` run of a thread; `turn.completed` / `turn.failed` close the turn.

Item lines carry no identity of their own: a later run may print exactly the
same line ("Done."), so neither the id nor the line's content names an item
uniquely across a session. Like Gemini's lines, they are known by their place
in the buffer.

Older CLIs print another protocol (`{"id": "0", "msg": {...}}`): codex_legacy.py.
"""

from app.providers import codex_legacy
from app.providers import control_lines
from app.providers.decode import parse_with
from app.providers.decode import text_of
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TURN_STARTED
from app.transcript.event_types import StreamEvent
from app.transcript.event_types import ignored

# Older builds named the assistant's reply `assistant_message` (under `item_type`).
ITEM_ALIASES = {"assistant_message": "agent_message"}
IN_PROGRESS = "in_progress"


def parse_line(line):
    """Turn one raw `codex exec --json` line into a `StreamEvent`; never raises. A line
    of the older `{"id", "msg"}` protocol is read by codex_legacy.py."""
    return parse_with(line, PARSERS, untyped=codex_legacy.parse_object)


def parse_item(obj):
    """One state of an item (started, updated or completed): its blocks, under its id.

    An item with an id always yields an event, even with no blocks yet (an
    agent_message started empty): it holds the item's place in the turn.
    """
    item = obj.get("item")
    if not isinstance(item, dict):
        return ignored("no_item")
    kind = text_of(item.get("type")) or text_of(item.get("item_type"))
    kind = ITEM_ALIASES.get(kind, kind)
    if kind == "error":
        return _error_item(obj, item)
    builder = ITEM_BLOCKS.get(kind)
    if builder is None:
        return ignored("unknown_item")
    blocks = tuple(builder(item))
    item_id = text_of(item.get("id")) or None
    if not blocks and item_id is None:
        return ignored("empty_item")
    info = {**_provisional(kind, item), **_exit_code(kind, item)}
    return StreamEvent(ASSISTANT, blocks, item_id=item_id, info=info,
                       item_done=obj.get("type") == "item.completed")


def _provisional(kind, item):
    """A running command's output so far, for live events only: the turn keeps no
    result until the command's final state (`info["provisional_blocks"]`)."""
    output = item.get("aggregated_output")
    if kind != "command_execution" or item.get("status") != IN_PROGRESS:
        return {}
    if not isinstance(output, str) or not output:
        return {}
    return {"provisional_blocks": [_tool_result(item, output, False)]}


def _exit_code(kind, item):
    """A finished command's exit code, beside the blocks (the transcript rows keep
    none; the evidence record does: app/transcript/evidence.py)."""
    code = item.get("exit_code")
    if kind != "command_execution" or not isinstance(code, int) or isinstance(code, bool):
        return {}
    return {"exit_code": code}


def parse_turn_started(obj):
    """A turn begins: item ids start afresh."""
    return StreamEvent(TURN_STARTED)


def parse_turn_completed(obj):
    """The end of a successful turn, with the thread's token usage so far: exec reports
    a running total of the thread (earlier resumed runs included); the accumulator
    takes the turn's own from it."""
    info = {"subtype": "success", "is_error": False}
    if isinstance(obj.get("usage"), dict):
        info["thread_usage"] = obj["usage"]
    return StreamEvent(RESULT, info=info)


def parse_turn_failed(obj):
    """The end of a failed turn: the error's message is the result."""
    error = obj.get("error")
    info = {"subtype": "error", "is_error": True}
    message = text_of(error.get("message")) if isinstance(error, dict) else ""
    if message:
        info["result"] = message
    return StreamEvent(RESULT, info=info)


def parse_thread_started(obj):
    """The thread's first line: a system note naming it."""
    thread_id = text_of(obj.get("thread_id"))
    text = f"Session started: thread={thread_id}" if thread_id else "Session started"
    identity = f"codex:thread:{thread_id}" if thread_id else None
    info = {"subtype": "init", "thread_id": thread_id} if thread_id else {"subtype": "init"}
    return StreamEvent(SYSTEM, identity=identity, text=text, info=info)


def _error_item(obj, item):
    """A non-fatal error item: a system note, once, when it is completed."""
    if obj.get("type") != "item.completed":
        return ignored("error_item_not_completed")
    return StreamEvent(SYSTEM, text=text_of(item.get("message")).strip(),
                       info={"subtype": "error"})


def parse_error(obj):
    """A stream-level error (not a turn's end): a system note with its message."""
    return StreamEvent(SYSTEM, text=text_of(obj.get("message")).strip(), info={"subtype": "error"})


def _agent_message(item):
    text = text_of(item.get("text"))
    return [{"type": "text", "text": text}] if text else []


def _reasoning(item):
    text = text_of(item.get("text"))
    return [{"type": "reasoning", "text": text}] if text else []


def _command_execution(item):
    use = _tool_use(item, "command_execution", {"command": item.get("command")})
    if item.get("status") == IN_PROGRESS:
        return [use]  # no outcome yet: its result comes with a later state
    exit_code = item.get("exit_code")
    failed = item.get("status") in ("failed", "declined") or (
        isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0)
    return [use, _tool_result(item, item.get("aggregated_output", ""), failed)]


def _file_change(item):
    changes = item.get("changes")
    changes = changes if isinstance(changes, list) else []
    return [_tool_use(item, "file_change", {"changes": changes})]


def _mcp_tool_call(item):
    name = f"{text_of(item.get('server'))}.{text_of(item.get('tool'))}"
    arguments = item.get("arguments")
    use = _tool_use(item, name, arguments if arguments is not None else {})
    if item.get("status") == IN_PROGRESS:
        return [use]
    error, result = item.get("error"), item.get("result")
    if isinstance(error, dict) and error:
        return [use, _tool_result(item, text_of(error.get("message")), True)]
    content = result.get("content", "") if isinstance(result, dict) else ""
    return [use, _tool_result(item, content, item.get("status") == "failed")]


def _web_search(item):
    return [_tool_use(item, "web_search", {"query": item.get("query")})]


def _todo_list(item):
    items = item.get("items")
    return [_tool_use(item, "todo_list", {"items": items if isinstance(items, list) else []})]


def _tool_use(item, name, tool_input):
    return {"type": "tool_use", "id": item.get("id"), "name": name, "input": tool_input}


def _tool_result(item, content, is_error):
    return {"type": "tool_result", "tool_use_id": item.get("id"),
            "content": content if content is not None else "", "is_error": bool(is_error)}


ITEM_BLOCKS = {
    "agent_message": _agent_message,
    "reasoning": _reasoning,
    "command_execution": _command_execution,
    "file_change": _file_change,
    "mcp_tool_call": _mcp_tool_call,
    "web_search": _web_search,
    "todo_list": _todo_list,
}
PARSERS = {
    "thread.started": parse_thread_started,
    "turn.started": parse_turn_started,
    "item.started": parse_item,
    "item.updated": parse_item,
    "item.completed": parse_item,
    "turn.completed": parse_turn_completed,
    "turn.failed": parse_turn_failed,
    "error": parse_error,
    **control_lines.NEUTRAL_PARSERS,
}
