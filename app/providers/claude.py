"""Claude Code `stream-json` lines as `StreamEvent`s: assistant, user, result, system,
the raw API stream events of `--include-partial-messages`, and the OpenAI-shaped
`{"type": "message", "role": "assistant", ...}` line some runners send instead.
"""
import hashlib
import json

from app.providers import control_lines
from app.providers.claude_notes import summarise_rate_limit
from app.providers.claude_notes import summarise_system
from app.providers.decode import parse_with
from app.providers.json_depth import too_deep
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import IGNORED
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TOOL_RESULTS
from app.transcript.event_types import StreamEvent
from app.transcript.event_types import ignored

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


def line_identity(obj):
    """The line's own id (`uuid`), or None when it has none."""
    uuid = obj.get("uuid")
    return uuid if isinstance(uuid, str) and uuid else None


def parse_assistant(obj):
    """An assistant line: its content blocks and message id."""
    message = obj.get("message")
    if not isinstance(message, dict):
        return ignored("no_message")
    blocks = with_parent(assistant_blocks(message.get("content")), obj)
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    usage = token_usage(message.get("usage"))
    info = {"usage": usage} if usage and message_id else {}
    identity = line_identity(obj) or _message_identity(message_id, message.get("content"))
    return StreamEvent(ASSISTANT, tuple(blocks), identity, message_id, info=info)


def _message_identity(message_id, content):
    """A line without a `uuid` is named by its message id and its content (Claude
    prints each block of a message on a line of its own, under the message's id)."""
    if message_id is None:
        return None
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8", "surrogatepass"))
    return f"claude:{message_id}:{digest.hexdigest()[:24]}"


USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")


def token_usage(usage):
    """The whole-number token counts of a Messages API `usage` object ({} if none)."""
    if not isinstance(usage, dict):
        return {}
    counts = {}
    for key in USAGE_FIELDS:  # a loop, not a comprehension: each value looked up once
        value = usage.get(key)
        if type(value) is int and 0 <= value < 2**40:  # JSON's ints; a bool is no count
            counts[key] = value
    return counts


def parse_user(obj):
    """A user line: the tool results it reports, or (`"isReplay": true`, text content)
    the echo of a prompt the agent took; a user line of any other text is ignored."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if obj.get("isReplay") is True:
        event = control_lines.prompt(obj.get("uuid"), content)
        if event.kind != IGNORED or not isinstance(content, list):
            return event
    if not isinstance(content, list):
        # A plain prompt echo: the transcript records agent output only.
        return ignored("user_prompt")
    results = [
        _tool_result(block)
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    if not results:
        return ignored("no_tool_result")
    return StreamEvent(TOOL_RESULTS, tuple(with_parent(results, obj)), line_identity(obj))


def with_parent(blocks, obj):
    """A sub-agent's blocks (a line with a `parent_tool_use_id`: the Task tool call that
    started it), each marked with that id, so a reader can nest them under the call."""
    parent = obj.get("parent_tool_use_id")
    if not isinstance(parent, str) or not parent:
        return blocks
    return [{**block, "parent_tool_use_id": parent} for block in blocks]


def parse_result(obj):
    """A result line: it closes the turn and carries the outcome fields."""
    info = {key: obj[key] for key in RESULT_FIELDS if key in obj}
    if isinstance(obj.get("result"), str):
        info["result"] = obj["result"]
    if isinstance(obj.get("session_id"), str):
        # whose running cost `total_cost_usd` is: the accumulator steps it per session
        info["agent_session"] = obj["session_id"]
    usage = token_usage(obj.get("usage"))
    if usage:  # the agent's own total for the turn: it wins over the per-message fold
        info["usage"] = usage
    return StreamEvent(RESULT, identity=line_identity(obj), info=info)


def parse_system(obj):
    """A system line, summarised for a human reader (claude_notes.py)."""
    subtype = obj.get("subtype") if isinstance(obj.get("subtype"), str) else ""
    info = {"subtype": subtype}
    if subtype == "init" and isinstance(obj.get("session_id"), str):
        # an interactive Claude prints its init at every turn: named, a repeat is no news
        info["agent_session"] = obj["session_id"]
    return StreamEvent(SYSTEM, identity=line_identity(obj), text=summarise_system(subtype, obj),
                       info=info)


def parse_rate_limit(obj):
    """A rate-limit notice: a note when the limit is near or reached, else nothing."""
    text = summarise_rate_limit(obj)
    if not text:
        return ignored("rate_limit_allowed")
    return StreamEvent(SYSTEM, identity=line_identity(obj), text=text,
                       info={"subtype": "rate_limit"})


def assistant_blocks(content):
    """The blocks worth keeping from assistant content (a string or a list of parts)."""
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
        blocks.append(block)  # the line's own decoded dict: nothing else holds it
    return blocks


def _tool_result(block):
    return {
        "type": "tool_result",
        "tool_use_id": block.get("tool_use_id"),
        "content": block.get("content", ""),
        "is_error": bool(block.get("is_error", False)),
    }


# The OpenAI-shaped assistant message line.

def parse_openai_message(obj):
    """An assistant message: its content parts, then its tool calls as tool_use blocks."""
    if obj.get("role") != "assistant":
        return ignored("not_assistant")
    blocks = assistant_blocks(obj.get("content"))
    blocks.extend(_tool_calls(obj.get("tool_calls")))
    message_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    return StreamEvent(ASSISTANT, tuple(blocks), line_identity(obj), message_id)


def _tool_calls(tool_calls):
    if not isinstance(tool_calls, list):
        return []
    blocks = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _arguments(arguments),
            }
        )
    return blocks


def _arguments(arguments):
    """Tool arguments as an object; a string that is not (sane) JSON is kept raw."""
    if not isinstance(arguments, str):
        return arguments if arguments is not None else {}
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return {"raw_arguments": arguments}
    if too_deep(value):
        return {"raw_arguments": arguments}
    return value if value is not None else {}


# `--include-partial-messages`: the raw API stream events (message_start,
# content_block_start/delta, ...). The complete `assistant` line that follows
# carries the same blocks whole, so the turn ignores these (reading the deltas too
# would double the text); what they add is surfaced in `info["partial"]` for the
# live events (app/transcript/live_events.py) and nothing else.
DELTA_FIELDS = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking"),
                "input_json_delta": ("tool_use", "partial_json")}


def parse_partial(obj):
    """A raw API stream event: ignored by the turn, its live meaning in `info`.

    A `message_delta` carries the message's final usage (cumulative counts); the
    assistant lines of that message repeat an early snapshot of it, so the turn
    counts the delta's (`info["message_usage"]`, for the message last started).
    """
    event = obj.get("event")
    partial = _partial(event) if isinstance(event, dict) else None
    info = {"reason": "partial_message"}
    if partial is not None:
        info["partial"] = partial
    if isinstance(event, dict) and event.get("type") == "message_delta":
        usage = token_usage(event.get("usage"))
        if usage:
            info["message_usage"] = usage
    return StreamEvent(IGNORED, info=info)


def _partial(event):
    """{"op": "message" | "start" | "delta", ...} for the stream events a live view
    can show; None for the rest (stops, signatures, message deltas)."""
    kind, index = event.get("type"), event.get("index")
    if kind == "message_start":
        message = event.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        return {"op": "message", "message_id": message_id if isinstance(message_id, str) else None}
    if not isinstance(index, int) or isinstance(index, bool):
        return None
    if kind == "content_block_start" and isinstance(event.get("content_block"), dict):
        block = event["content_block"]
        return {"op": "start", "index": index,
                "block": {key: block[key] for key in ("type", "id", "name") if key in block}}
    delta = event.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        block_type, field = DELTA_FIELDS.get(delta.get("type"), (None, None))
        text = delta.get(field) if field else None
        if isinstance(text, str) and text:
            return {"op": "delta", "index": index, "type": block_type, "text": text}
    return None


PARSERS = {
    "assistant": parse_assistant,
    "message": parse_openai_message,
    "user": parse_user,
    "result": parse_result,
    "system": parse_system,
    "rate_limit_event": parse_rate_limit,
    "stream_event": parse_partial,
    "control_request": control_lines.parse_control_request,
    "control_cancel_request": control_lines.parse_control_cancel,
    # The agent's answers to the runner's requests and its acknowledgements of
    # prompts: nothing for the transcript (the raw line stays in the output).
    "control_response": lambda obj: ignored("control_response"),
    "command_lifecycle": lambda obj: ignored("command_lifecycle"),
    **control_lines.NEUTRAL_PARSERS,
}


def parse_line(line):
    """Turn one raw Claude stdout line into a `StreamEvent`; never raises."""
    return parse_with(line, PARSERS)
