"""Transcript rows as bubbles: what the viewer shows for each message, and when to skip one.

A row written today keeps every block in `content_blocks`, its text blocks included,
in arrival order, so a bubble is its blocks in that order. An older row kept only the
non-text blocks there (its text in `content`): its bubble is the content text first,
then the blocks. Each tool_result is shown under the tool call it answers (same
`tool_use_id`) when that call is in the same row; otherwise it stays in its place. A
sub-agent's blocks (Claude marks them with the `parent_tool_use_id` of the Task call
that started the sub-agent) are shown inside that call, before its result. A row with
neither visible text nor anything to show makes no bubble at all.

The tool results kept beside the rows (session_tool_results, issue 32) fill in what a row
does not hold: an ordinary session's row keeps its calls but not their results, so each
stored result is shown under its call; a turn that wrote no row (a tool-only turn) is a
compact `ToolTurnBlock` between the bubbles, in its place. A result starts collapsed,
with its first and last lines in its summary; a failed one starts open, in the live
bubble (static/viewer.js) as in the closed one. Pure: no Flask.
"""
import json
import re
from dataclasses import dataclass

from app.formats.tool_text import tool_result_text
from app.ui import markdown

TOOL_USES = ("tool_use", "server_tool_use")
THINKING_LABELS = {"thinking": "Thinking", "reasoning": "Reasoning"}
PREVIEW_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description")
PREVIEW_CHARS = 80
RESULT_PREVIEW_CHARS = 80  # of a collapsed result's first and last lines, each
# Sub-agents shown one inside another at most this deep; deeper ones are shown beside
# their parent at this depth (a page of any depth renders).
MAX_SUBAGENT_DEPTH = 8
# A line that is one bold phrase: a reasoning summary's heading (thinking_view).
BOLD_HEADING = re.compile(r"\*\*([^*\n]+)\*\*")


@dataclass(frozen=True)
class Bubble:
    id: int
    role: str
    timestamp: str
    html: str  # the content text rendered as Markdown ("" when there is none)
    parts: list  # one dict per block worth showing, each with a "kind"
    # a prompt's row: the uuid of the input it applied (its bubble replaces the sent one)
    input_uuid: str | None = None
    kind: str = "message"


@dataclass(frozen=True)
class ToolTurnBlock:
    """A turn that wrote no row (an ordinary session's tool-only turn): its calls, each
    with its result, shown compactly between the bubbles."""

    turn_id: str
    dom_id: str  # the HTML id, unique per turn
    timestamp: str
    parts: list
    kind: str = "tool_turn"


def bubbles(messages, tools=None):
    """The bubbles for `messages`, in order, with the tool-only turns of `tools` (a
    PageTools, or None) among them; rows with nothing to show are left out."""
    by_message = tools.by_message if tools else {}
    loose = list(tools.tool_turns) if tools else []
    out = []
    for message in messages:
        while loose and loose[0].after_message_id < message.id:
            out.append(tool_turn_block(loose.pop(0)))
        # Tool ids are looked up within their own message: Codex restarts item ids
        # (item_0, ...) with every run, so a session may hold the same id many times.
        blocks = _blocks(message)
        tool_names = {block.get("id"): block.get("name") for block in blocks
                      if block.get("type") in TOOL_USES}
        found = [part for part in (_part(b, tool_names, message.id) for b in blocks) if part]
        found.extend(_stored_results(by_message.get(message.id, ()), blocks, tool_names, message.id))
        parts = nested(found)
        text = message.content if isinstance(message.content, str) else ""
        if any(block.get("type") == "text" for block in blocks):
            text = ""  # the text blocks are in place among the others
        if not text.strip() and not parts:
            continue
        out.append(Bubble(message.id, message.role, message.timestamp,
                          markdown.render(text) if text.strip() else "", parts,
                          _input_uuid(message)))
    out.extend(tool_turn_block(turn) for turn in loose)
    return out


def tool_turn_block(turn):
    """The ToolTurnBlock of a ToolTurn: each call with its result under it; a result
    whose call an earlier turn made, on its own."""
    key = "turn-" + re.sub(r"[^A-Za-z0-9_-]", "_", turn.turn_id)
    parts = []
    for result in turn.tool_results:
        answer = _result_part(result, result.name, key)
        if result.name is None:
            parts.append(answer)
            continue
        tool_input = result.input if result.input is not None else {}
        parts.append({"kind": "tool_use", "name": result.name, "tool_id": result.tool_use_id,
                      "anchor": anchor(key, result.tool_use_id), "preview": _preview(tool_input),
                      "input_json": _json(tool_input),
                      "results": [answer] if result.has_result else [], "children": []})
    return ToolTurnBlock(turn.turn_id, key, turn.created_at, parts)


def _stored_results(results, blocks, tool_names, message_id):
    """The result parts of a row's stored tool results that its blocks do not hold (an
    ordinary row keeps none; an autonomous one holds them already)."""
    held = {block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"}
    return [_result_part(result, result.name or tool_names.get(result.tool_use_id), message_id)
            for result in results if result.has_result and result.tool_use_id not in held]


def _result_part(result, tool_name, key):
    """A tool_result part of a stored ToolResult."""
    part = _result_view(result.output, result.tool_use_id, tool_name, result.is_error, key)
    if result.output_omitted:
        part["note"] = f"{result.output_bytes:,} bytes, not shown on this page"
    elif result.truncated:
        part["note"] = f"cut to its first and last parts: {result.output_bytes:,} bytes in all"
    return part


def _result_view(text, tool_id, tool_name, is_error, key):
    """A tool_result part: collapsed with its first and last lines as a preview, a
    failed one open."""
    head, tail = result_preview(text)
    return {"kind": "tool_result", "tool_name": tool_name, "tool_id": str(tool_id or ""),
            "anchor": anchor(key, tool_id), "is_error": bool(is_error), "text": text,
            "open": bool(is_error), "head": head, "tail": tail}


def result_preview(text):
    """(first, last) non-blank lines of a result, each cut to RESULT_PREVIEW_CHARS; the
    last is "" when it is the first (or there is one line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "", ""
    head, tail = (_clip(lines[0]), _clip(lines[-1]) if len(lines) > 1 else "")
    return head, tail


def _clip(line):
    return line if len(line) <= RESULT_PREVIEW_CHARS else line[:RESULT_PREVIEW_CHARS - 1] + "…"


@dataclass(frozen=True)
class OpenTurnBubble:
    """The turn still accumulating, shown provisionally until its row is written."""

    turn_id: str
    timestamp: str
    parts: list  # as a Bubble's


def open_turn_bubble(open_turn):
    """The provisional bubble of a session's `open_turn` ({turn_id, started_at,
    visible_text, content_blocks}), or None when there is none or it shows nothing.

    Its text is rendered as Markdown, as the row that replaces it will be: the open
    turn holds whole blocks only (text still streaming is the page's, which has the
    server render it too: POST /ui/markdown). A block that carries a `block_id` keeps
    it, so live events find it.
    """
    if not isinstance(open_turn, dict) or not open_turn.get("turn_id"):
        return None
    message = _OpenTurnRow(open_turn.get("content_blocks"))
    blocks = _blocks(message)
    tool_names = {block.get("id"): block.get("name") for block in blocks
                  if block.get("type") in TOOL_USES}
    parts = []
    for block in blocks:
        part = _part(block, tool_names, "open")
        if part:
            parts.append({**part, "block_id": str(block.get("block_id") or "")})
    if not parts:
        return None
    return OpenTurnBubble(str(open_turn["turn_id"]), str(open_turn.get("started_at") or ""),
                          nested(parts))


@dataclass(frozen=True)
class _OpenTurnRow:
    content_blocks: list


def nested(parts):
    """`parts` with each tool_result moved into the `results` of the tool_use it answers,
    then each part of a sub-agent into the `children` of the (Task) tool_use that
    started it (its block's `parent_tool_use_id`).

    A result whose call is not among `parts` (made in an earlier row), and a sub-agent
    part whose call is not, keep their place. The tree is built without recursion and
    is at most MAX_SUBAGENT_DEPTH deep: a part deeper than that is shown beside its
    parent, at the cap. A part whose parent chain loops back to itself (its own id, or
    two calls naming each other) is shown at the top, so no part is ever hidden.
    """
    calls = {}
    out = []
    for part in parts:
        if part["kind"] == "tool_use":
            calls[part["anchor"]] = part  # a repeated id: its results follow the latest call
        elif part["kind"] == "tool_result" and part["anchor"] in calls:
            calls[part["anchor"]]["results"].append(part)
            continue
        out.append(part)
    holders = _holders(out, calls)
    nested_out = []
    for part in out:
        holder = holders[id(part)]
        if holder is None:
            nested_out.append(part)
        else:
            holder["children"].append(part)
    return nested_out


def _holders(parts, calls):
    """id(part) -> the part it is shown inside (None: at the top), for every part and
    every call up its parent chain."""
    holders, levels = {}, {}
    for part in parts:
        path, places, node = [], {}, part
        while id(node) not in levels:
            parent = calls.get(node.get("parent"))
            if parent is None or id(node) in places:
                if parent is not None:  # a loop: each part on it goes to the top
                    loop = path[places[id(node)]:]
                    del path[places[id(node)]:]
                    for member in loop:
                        holders[id(member)], levels[id(member)] = None, 0
                else:
                    holders[id(node)], levels[id(node)] = None, 0
                break
            places[id(node)] = len(path)
            path.append(node)
            node = parent
        for node in reversed(path):  # each one's parent is placed by now
            parent = calls[node["parent"]]
            if levels[id(parent)] < MAX_SUBAGENT_DEPTH:
                holders[id(node)], levels[id(node)] = parent, levels[id(parent)] + 1
            else:
                holders[id(node)], levels[id(node)] = holders[id(parent)], MAX_SUBAGENT_DEPTH
    return holders


def anchor(message_id, tool_id):
    """The HTML id of a tool_use block, unique per message and safe whatever
    characters the tool id holds."""
    return f"tool-{message_id}-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(tool_id))


def _blocks(message):
    blocks = message.content_blocks if isinstance(message.content_blocks, list) else []
    return [block for block in blocks if isinstance(block, dict)]


def _part(block, tool_names, message_id):
    part = _block_part(block, tool_names, message_id)
    parent = block.get("parent_tool_use_id")
    if part and isinstance(parent, str) and parent:
        part["parent"] = anchor(message_id, parent)
    return part


def _block_part(block, tool_names, message_id):
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return {"kind": "text", "html": markdown.render(text)} if _visible(text) else None
    if kind in THINKING_LABELS:
        text = _thinking_text(block)
        if not text:
            return None
        title, html = thinking_view(text)
        return {"kind": "thinking", "label": THINKING_LABELS[kind], "text": text,
                "title": title, "html": html}
    if kind == "redacted_thinking":
        return {"kind": "redacted_thinking"}
    if kind in TOOL_USES:
        tool_input = block.get("input")
        return {"kind": "tool_use", "name": str(block.get("name") or "tool"),
                "tool_id": str(block.get("id") or ""),
                "anchor": anchor(message_id, block.get("id")), "preview": _preview(tool_input),
                "input_json": _json(tool_input if tool_input is not None else {}),
                "results": [], "children": []}
    if kind == "tool_result":
        tool_id = block.get("tool_use_id")
        return _result_view(tool_result_text(block.get("content")), tool_id,
                            tool_names.get(tool_id), block.get("is_error"), message_id)
    return {"kind": "other", "type": str(kind or "block"), "json": _json(block)}


def thinking_view(text):
    """(title, body as safe HTML) of a thinking or reasoning text. A Codex reasoning
    summary opens with its heading in bold on a line of its own (`**Title**`): that is
    the block's title, and the rest its body; any other text has no title. The body is
    rendered as Markdown, as text is."""
    text = text.strip()
    first, _, rest = text.partition("\n")
    heading = BOLD_HEADING.fullmatch(first.strip())
    if heading is None or not heading.group(1).strip():
        return "", markdown.render(text)
    return heading.group(1).strip(), markdown.render(rest) if rest.strip() else ""


def _input_uuid(message):
    metadata = message.metadata if isinstance(message.metadata, dict) else {}
    uuid = metadata.get("uuid")
    return uuid if message.role == "user" and isinstance(uuid, str) else None


def _visible(text):
    return isinstance(text, str) and bool(text.strip())


def _thinking_text(block):
    for key in ("thinking", "reasoning", "text", "summary"):
        value = block.get(key)
        if isinstance(value, list):  # OpenAI reasoning: summary parts with "text"
            value = "\n\n".join(p.get("text", "") for p in value if isinstance(p, dict))
        if _visible(value):
            return value.strip()
    return ""


def _preview(tool_input):
    if not isinstance(tool_input, dict):
        return ""
    for key in PREVIEW_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            line = value.strip().splitlines()[0]
            return line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS - 1] + "…"
    return ""


def _json(value):
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
