"""The transcript as OpenAI chat-completions messages.

Assistant rows become assistant messages, their tool_use blocks `tool_calls`
(arguments as a JSON string); folded tool_result blocks (autonomous sessions)
follow as `role: tool` messages. Thinking has no slot in this shape and is left out.
"""
import json

from app.formats.tool_text import tool_result_text


def to_openai_messages(messages):
    """Map stored `Message`s to a list of OpenAI chat message dicts."""
    out = []
    for message in messages:
        if message.role == "assistant":
            out.extend(_assistant(message))
        elif message.content:
            out.append({"role": message.role, "content": message.content})
    return out


def _assistant(message):
    blocks = message.content_blocks or []
    calls = [
        {
            "id": block.get("id"),
            "type": "function",
            "function": {
                "name": block.get("name"),
                "arguments": json.dumps(block.get("input", {})),
            },
        }
        for block in blocks
        if block.get("type") in ("tool_use", "server_tool_use")
    ]
    entry = {"role": "assistant", "content": message.content or None}
    if calls:
        entry["tool_calls"] = calls
    results = [
        {
            "role": "tool",
            "tool_call_id": block.get("tool_use_id"),
            "content": tool_result_text(block.get("content")),
        }
        for block in blocks
        if block.get("type") == "tool_result"
    ]
    if entry["content"] is None and not calls:
        return results
    return [entry, *results]
