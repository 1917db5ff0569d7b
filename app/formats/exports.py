"""A session's transcript as a document to download (Markdown; the OpenAI shape is
openai_format.py).

Pure: it reads an `AgentSession` with its `messages` and returns text or plain
data; the view chooses the format and sets the headers. Markdown is plain text,
so nothing is escaped, but every verbatim part (tool input, tool output) sits in
a fence longer than any run of backticks inside it, so it cannot close early.
"""
import json
import re

from app.formats.tool_text import tool_result_text

FORMATS = ("openai", "markdown", "json")
EXTENSIONS = {"openai": "openai.json", "markdown": "md", "json": "json"}
ROLE_TITLES = {"assistant": "Assistant", "system": "System", "user": "User", "tool": "Tool"}


def export_filename(session, fmt):
    """The attachment name for a session exported in `fmt`."""
    return f"turnlog-{session.session_id}.{EXTENSIONS[fmt]}"


def to_markdown(session):
    """The transcript as one readable Markdown document."""
    return "".join(markdown_parts(session, [session.messages]))


def markdown_parts(session, pages):
    """to_markdown's document in parts, a message at a time, the messages from `pages`
    (lists of messages, in write order): an export streams it. The document's trailing
    blank lines are held back until more text follows, so it ends in one newline."""
    pending = ""
    for part in _markdown_lines(session, pages):
        body = part.rstrip("\n")
        if body:
            yield pending + body
            pending = part[len(body):]
        else:
            pending += part
    yield "\n"


def _markdown_lines(session, pages):
    head = [
        f"# Session {session.session_id}",
        "",
        f"- Type: {session.session_type}",
        f"- Status: {session.status}",
        f"- Provider: {session.provider}",
        f"- Created: {session.created_at}",
        f"- Turns: {session.conversation_turn_count}, messages: {session.message_count}"
        f" ({session.visible_message_count} with text)",
        "",
    ]
    yield "\n".join(head)
    for page in pages:
        for message in page:
            yield "\n" + "\n".join(_message(message))


def json_parts(fields, key, dumped_pages):
    """The object `fields` with its list `key` made of the items of `dumped_pages`
    (lists of plain data), as JSON text in parts, a page at a time."""
    rest = json.dumps({name: value for name, value in fields.items() if name != key})
    yield rest[:-1] + (", " if rest != "{}" else "") + json.dumps(key) + ": ["
    yield from json_list_items(dumped_pages)
    yield "]}"


def json_list_parts(dumped_pages):
    """A JSON list of the items of `dumped_pages` in parts, a page at a time."""
    yield "["
    yield from json_list_items(dumped_pages)
    yield "]"


def json_list_items(dumped_pages):
    first = True
    for page in dumped_pages:
        if page:
            yield ("" if first else ", ") + ", ".join(json.dumps(item) for item in page)
            first = False


def _message(message):
    title = ROLE_TITLES.get(message.role, message.role.title())
    out = [f"## {title} · {message.timestamp}", ""]
    blocks = message.content_blocks or []
    # A row written today holds its text among its blocks, in arrival order; an
    # older one holds only the other blocks, its text in `content`.
    if message.content and not any(block.get("type") == "text" for block in blocks):
        out.extend([message.content, ""])
    for block in blocks:
        lines = _block(block)
        parent = block.get("parent_tool_use_id")
        if lines and isinstance(parent, str) and parent:  # a sub-agent's block
            lines = [f"_Sub-agent of `{parent}`:_", "", *lines]
        out.extend(lines)
    return out


def _block(block):
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return [text, ""] if isinstance(text, str) and text.strip() else []
    if kind in ("tool_use", "server_tool_use"):
        head = f"**Tool call: {block.get('name')}** (`{block.get('id')}`)"
        return [head, "", *_fenced(json.dumps(block.get("input", {}), indent=2), "json"), ""]
    if kind == "tool_result":
        status = " (error)" if block.get("is_error") else ""
        head = f"**Tool result{status}** (`{block.get('tool_use_id')}`)"
        return [head, "", *_fenced(tool_result_text(block.get("content")), "text"), ""]
    if kind in ("thinking", "reasoning"):
        thought = block.get("thinking") if kind == "thinking" else block.get("text")
        return [*_quoted("Thinking", thought or ""), ""]
    if kind == "redacted_thinking":
        return [*_quoted("Thinking (redacted)", ""), ""]
    return [f"**{kind} block**", "", *_fenced(json.dumps(block, indent=2), "json"), ""]


def _quoted(label, text):
    """A quoted note: `> _label_` and the text, each line quoted."""
    body = [f"> {line}" if line else ">" for line in text.splitlines()]
    return [f"> _{label}_", *([">", *body] if body else [])]


def _fenced(text, lang):
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{lang}", text, fence]
