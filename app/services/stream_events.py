"""Parse one stdout line of an agent into a `StreamEvent`.

Understands Claude Code `stream-json` (system, assistant, user, result) and the
OpenAI-style `{"type": "message", "role": "assistant", ...}` line. Anything else,
including text that is not JSON, becomes an `ignored` event: the raw line stays in
the output buffer, but it never touches a turn.
"""
import json
from dataclasses import dataclass
from dataclasses import field

ASSISTANT = "assistant"
TOOL_RESULTS = "tool_results"
RESULT = "result"
SYSTEM = "system"
IGNORED = "ignored"

# Block types an assistant line may carry, kept verbatim (opaque fields included).
ASSISTANT_BLOCK_TYPES = frozenset(
    {"text", "tool_use", "server_tool_use", "thinking", "redacted_thinking"}
)
# Result fields worth keeping with the turn they close.
RESULT_FIELDS = (
    "subtype",
    "is_error",
    "stop_reason",
    "terminal_reason",
    "num_turns",
    "duration_ms",
    "total_cost_usd",
)


@dataclass(frozen=True)
class StreamEvent:
    """What one line means to the accumulator.

    `identity` is the line's own id (Claude's `uuid`) when it has one; lines
    without one are identified by their position in the buffer instead.
    """

    kind: str
    blocks: tuple = ()
    identity: str | None = None
    message_id: str | None = None
    text: str = ""
    info: dict = field(default_factory=dict)


def parse_line(line):
    """Turn one raw stdout line into a `StreamEvent`; never raises."""
    try:
        obj = json.loads(line)
    except (TypeError, ValueError):
        return StreamEvent(IGNORED, info={"reason": "not_json"})
    if not isinstance(obj, dict):
        return StreamEvent(IGNORED, info={"reason": "not_an_object"})
    parser = _PARSERS.get(obj.get("type"))
    if parser is None:
        return StreamEvent(IGNORED, info={"reason": "unknown_type"})
    return parser(obj)


def _identity(obj):
    uuid = obj.get("uuid")
    return uuid if isinstance(uuid, str) and uuid else None


def _parse_assistant(obj):
    message = obj.get("message")
    if not isinstance(message, dict):
        return StreamEvent(IGNORED, info={"reason": "no_message"})
    blocks = _assistant_blocks(message.get("content"))
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    return StreamEvent(ASSISTANT, tuple(blocks), _identity(obj), message_id)


def _parse_openai_message(obj):
    if obj.get("role") != "assistant":
        return StreamEvent(IGNORED, info={"reason": "not_assistant"})
    blocks = _assistant_blocks(obj.get("content"))
    blocks.extend(_openai_tool_calls(obj.get("tool_calls")))
    message_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    return StreamEvent(ASSISTANT, tuple(blocks), _identity(obj), message_id)


def _parse_user(obj):
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        # A plain prompt echo: the transcript records agent output only.
        return StreamEvent(IGNORED, info={"reason": "user_prompt"})
    results = [
        _tool_result(block)
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    if not results:
        return StreamEvent(IGNORED, info={"reason": "no_tool_result"})
    return StreamEvent(TOOL_RESULTS, tuple(results), _identity(obj))


def _parse_result(obj):
    info = {key: obj[key] for key in RESULT_FIELDS if key in obj}
    if isinstance(obj.get("result"), str):
        info["result"] = obj["result"]
    return StreamEvent(RESULT, identity=_identity(obj), info=info)


def _parse_system(obj):
    subtype = obj.get("subtype") if isinstance(obj.get("subtype"), str) else ""
    return StreamEvent(
        SYSTEM,
        identity=_identity(obj),
        text=summarise_system(subtype, obj),
        info={"subtype": subtype},
    )


def summarise_system(subtype, obj):
    """A short human line for a system event, or "" when it says nothing to a reader."""
    if subtype == "init":
        parts = [f"model={obj['model']}"] if isinstance(obj.get("model"), str) else []
        if isinstance(obj.get("cwd"), str):
            parts.append(f"cwd={obj['cwd']}")
        if isinstance(obj.get("tools"), list):
            parts.append(f"tools={len(obj['tools'])}")
        if isinstance(obj.get("mcp_servers"), list):
            parts.append(f"mcp_servers={len(obj['mcp_servers'])}")
        return "Session started: " + (", ".join(parts) or "no details")
    if subtype == "compact_boundary":
        return "Conversation compacted"
    for key in ("message", "content", "text"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _assistant_blocks(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return []
    blocks = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("output_text", "input_text"):  # OpenAI Responses-style text part
            block = {"type": "text", "text": block.get("text", "")}
            kind = "text"
        if kind not in ASSISTANT_BLOCK_TYPES:
            continue
        if kind == "text" and not (isinstance(block.get("text"), str) and block["text"]):
            continue
        blocks.append(dict(block))
    return blocks


def _openai_tool_calls(tool_calls):
    if not isinstance(tool_calls, list):
        return []
    blocks = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        try:
            tool_input = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            tool_input = {"raw_arguments": arguments}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": tool_input if tool_input is not None else {},
            }
        )
    return blocks


def _tool_result(block):
    return {
        "type": "tool_result",
        "tool_use_id": block.get("tool_use_id"),
        "content": block.get("content", ""),
        "is_error": bool(block.get("is_error", False)),
    }


_PARSERS = {
    "assistant": _parse_assistant,
    "message": _parse_openai_message,
    "user": _parse_user,
    "result": _parse_result,
    "system": _parse_system,
}
