"""The transcript as OpenAI chat-completions messages.

Assistant rows become assistant messages, their tool_use blocks `tool_calls`
(arguments as a JSON string); folded tool_result blocks (autonomous sessions)
follow as `role: tool` messages. Thinking has no slot in this shape and is left out.
"""
import json


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
            "content": _tool_text(block.get("content")),
        }
        for block in blocks
        if block.get("type") == "tool_result"
    ]
    if entry["content"] is None and not calls:
        return results
    return [entry, *results]


def _tool_text(content):
    """tool_result content is a string or a list of parts; OpenAI wants a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else json.dumps(content)
