"""The OpenAI-shaped line `{"type": "message", "role": "assistant", ...}` as a `StreamEvent`."""
import json

from app.services.claude_lines import assistant_blocks
from app.services.claude_lines import line_identity
from app.services.event_types import ASSISTANT
from app.services.event_types import StreamEvent
from app.services.event_types import ignored
from app.services.json_depth import too_deep


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
