"""Builders for Claude Code stream-json lines, so tests read like the streams they feed."""
import itertools
import json

_counter = itertools.count(1)


def _uuid(prefix):
    return f"{prefix}-{next(_counter):06d}"


def assistant(*blocks, message_id="msg_test", uuid=None):
    return json.dumps({
        "type": "assistant",
        "uuid": uuid or _uuid("a"),
        "session_id": "claude-session",
        "parent_tool_use_id": None,
        "message": {"id": message_id, "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-5", "content": list(blocks),
                    "usage": {"input_tokens": 3, "output_tokens": 7}},
    })


def text(value):
    return {"type": "text", "text": value}


def tool_use(tool_id="toolu_1", name="Bash", tool_input=None):
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input or {"command": "ls"}}


def thinking(value="pondering"):
    return {"type": "thinking", "thinking": value, "signature": "c2ln"}


def tool_result(tool_id="toolu_1", content="README.md\n", is_error=False, uuid=None):
    return json.dumps({
        "type": "user",
        "uuid": uuid or _uuid("u"),
        "session_id": "claude-session",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}]},
    })


RESULT_USAGE = {"input_tokens": 3, "output_tokens": 7}


def result(subtype="success", is_error=False, text_result="", uuid=None, usage=RESULT_USAGE):
    """A result line; `usage=None` leaves its usage out (as some runners' lines do)."""
    line = {
        "type": "result", "subtype": subtype, "is_error": is_error, "num_turns": 1,
        "duration_ms": 10, "result": text_result, "uuid": uuid or _uuid("r"),
        "session_id": "claude-session",
    }
    if usage is not None:
        line["usage"] = usage
    return json.dumps(line)


def message_start(message_id, usage=None):
    """`--include-partial-messages`: the stream event that begins a message."""
    return _stream_event({"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "content": [],
        "usage": usage or {"input_tokens": 3, "output_tokens": 1}}})


def message_delta(usage):
    """`--include-partial-messages`: the message's end, with its final (cumulative) usage."""
    return _stream_event({"type": "message_delta",
                          "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                          "usage": usage})


def _stream_event(event):
    return json.dumps({"type": "stream_event", "uuid": _uuid("p"), "session_id": "claude-session",
                       "parent_tool_use_id": None, "event": event})


def system_init(uuid=None):
    return json.dumps({
        "type": "system", "subtype": "init", "uuid": uuid or _uuid("s"),
        "session_id": "claude-session", "cwd": "/repo", "model": "claude-sonnet-4-5",
        "tools": ["Bash", "Read"], "mcp_servers": [],
    })


def openai_message(content):
    return json.dumps({"type": "message", "role": "assistant", "content": content})
