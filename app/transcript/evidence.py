"""The evidence record: every shell command a turn ran, with its outcome; and every
tool call a turn made, with the result that answers it (`tool_result_items`).

A command is a tool call of one of SHELL_TOOLS (Claude's `Bash`, Codex's
`command_execution` item, Gemini's `run_shell_command`) together with its
tool_result. The record is read from the closed turn's normalized content
blocks, the same ones its transcript row holds, so the transcript itself is
untouched; what the blocks do not say, the buffer lines each command came from
and the exit code a provider reports beside the blocks, `EvidenceLines` notes
while the turn is open, in a small state kept with the turn's snapshot. Pure.
"""
import json
import re
import shlex

from app.formats.tool_text import tool_result_text
from app.transcript.test_summaries import summarize

# Tool name -> the input field that holds the command line.
SHELL_TOOLS = {"Bash": "command", "command_execution": "command", "run_shell_command": "command"}
EXCERPT_BYTES = 4096  # the output keeps its first and its last EXCERPT_BYTES
# A turn running more commands than this keeps no line range for the rest (they
# fall back to the turn's range), so the stored state stays bounded.
MAX_TRACKED = 1000
# Claude Code gives no exit code field, but starts a failed Bash result with
# "Exit code 2". Gemini's stream-json gives none at all.
CLAUDE_EXIT_CODE = re.compile(r"Exit code (-?\d+)\b")
TOOL_CALLS = ("tool_use", "server_tool_use")
# A tool result keeps at most this many bytes of UTF-8 of its output (the configured
# TOOL_RESULT_MAX_BYTES overrides it), and its call as many of its input as JSON.
TOOL_RESULT_MAX_BYTES = 64 * 1024
# An input over the bound keeps its top-level scalar fields, a string cut to this many
# characters: enough for the call's one-line preview (a path, a command).
INPUT_FIELD_CHARS = 1024


class EvidenceLines:
    """For the open turn: shell tool id -> [first event index, last event index,
    exit code or None], stored as a stored open turn's "evidence" (open_turn.py)."""

    def __init__(self, state=None):
        self.state = dict(state or {})

    def stored(self):
        """The state as stored: {} between commands."""
        return self.state

    def observe(self, event, event_index):
        """Note the line of a shell tool call, of its result, or of its new state."""
        for block in event.blocks:
            tool_id = self._tool_id(block)
            if not tool_id:
                continue
            entry = self.state.get(tool_id)
            if entry is None:
                if len(self.state) >= MAX_TRACKED:
                    continue
                entry = self.state[tool_id] = [event_index, event_index, None]
            entry[1] = event_index
            # Codex items carry it on the item's own event; the legacy protocol on the
            # event of the command's result, which has no item id
            if event.item_id in (None, tool_id) and _storable_code(event.info.get("exit_code")):
                entry[2] = event.info["exit_code"]

    def shell_blocks(self, event):
        """The event's blocks that evidence reads: shell tool calls and their results."""
        calls = {b.get("id") for b in event.blocks
                 if b.get("type") == "tool_use" and b.get("name") in SHELL_TOOLS}
        return tuple(b for b in event.blocks if self._tool_id(b) or (
            b.get("type") == "tool_result" and b.get("tool_use_id") in calls))

    def take(self, turn):
        """The evidence items of `turn` (a TranscriptTurn), in the order its commands
        ran; the state starts afresh for the next turn."""
        lines, self.state = self.state, {}
        return evidence_items(turn, lines)

    def _tool_id(self, block):
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") in SHELL_TOOLS:
            return block.get("id") if isinstance(block.get("id"), str) else None
        if kind == "tool_result" and block.get("tool_use_id") in self.state:
            return block["tool_use_id"]
        return None


def evidence_items(turn, lines=None):
    """One dict per shell command of `turn`: evidence_id, turn_id, command, exit_code,
    is_error, event_range, output_head, output_tail, output_bytes, test_summary."""
    lines = lines or {}
    results = {b.get("tool_use_id"): b for b in turn.content_blocks if b.get("type") == "tool_result"}
    items, seen = [], set()
    for block in turn.content_blocks:
        name, tool_id = block.get("name"), block.get("id")
        if block.get("type") != "tool_use" or name not in SHELL_TOOLS:
            continue
        if not isinstance(tool_id, str) or not tool_id or tool_id in seen:
            continue
        seen.add(tool_id)
        result = results.get(tool_id)
        output = tool_result_text(result.get("content")) if result else ""
        first, last, exit_code = lines.get(tool_id) or [*turn.event_range, None]
        if exit_code is None and result:
            exit_code = exit_code_in(output, bool(result.get("is_error")))
        head, tail, size = excerpt(output)
        items.append({
            "evidence_id": tool_id,
            "turn_id": turn.turn_id,
            "command": clipped(command_line(block.get("input"), SHELL_TOOLS[name])),
            "exit_code": exit_code,
            "is_error": bool(result and result.get("is_error")) or bool(exit_code),
            "event_range": [first, last],
            "output_head": head,
            "output_tail": tail,
            "output_bytes": size,
            "test_summary": summarize(output),
        })
    return items


def command_line(tool_input, field):
    """The command as one line of text: a string as it is, an argv list quoted."""
    value = tool_input.get(field) if isinstance(tool_input, dict) else None
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return shlex.join(value)
    return value if isinstance(value, str) else ""


def clipped(command):
    """The command as stored and served: whole up to 2 × EXCERPT_BYTES of UTF-8, else
    its first and last EXCERPT_BYTES (cut on a character, as the output's excerpts are)
    around a note of how many bytes were left out. An agent may run a command of
    megabytes (a here-document); every evidence page would carry it whole."""
    head, tail, size = excerpt(command)
    if not tail:
        return command
    cut = size - len(head.encode("utf-8", "surrogatepass")) - len(tail.encode("utf-8", "surrogatepass"))
    return f"{head} …[{cut} bytes cut]… {tail}"


def exit_code_in(output, is_error):
    """The exit code a provider wrote into the result text, or None. The prefix counts
    on failed results only: a successful command may print those words itself."""
    match = CLAUDE_EXIT_CODE.match(output) if is_error else None
    code = int(match[1]) if match else None
    return code if _storable_code(code) else None


def excerpt(output):
    """(head, tail, total UTF-8 bytes): the whole output in `head` when it fits in
    two excerpts, else its first and its last EXCERPT_BYTES (cut on a character)."""
    data = output.encode("utf-8", "surrogatepass")
    if len(data) <= 2 * EXCERPT_BYTES:
        return output, "", len(data)
    head = data[:EXCERPT_BYTES].decode("utf-8", "ignore")
    tail = data[-EXCERPT_BYTES:].decode("utf-8", "ignore")
    return head, tail, len(data)


def _storable_code(value):
    """True for an exit code the database can hold (a 64-bit integer): a larger number
    in a line is no real exit code, and storing it would fail the whole request."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63


def tool_result_items(turn, max_bytes=TOOL_RESULT_MAX_BYTES):
    """One dict per tool call of `turn` (each id once, in order) with the result that
    answers it in the turn, if any; then one per result whose call the turn does not
    hold (made in an earlier turn: name and input None). Each: turn_id, tool_use_id,
    name, input, has_result, is_error, output, output_bytes, truncated; the output is
    the result's text (app/formats/tool_text.py) cut to `max_bytes` (bounded_text), and
    the input is cut likewise (bounded_input). Read from the normalized blocks, so the
    same for every provider and session kind; the transcript rows are untouched."""
    results = {}
    for block in turn.content_blocks:
        if block.get("type") == "tool_result" and _is_id(block.get("tool_use_id")):
            results[block["tool_use_id"]] = block  # a restated result: its last state
    items, seen = [], set()
    for block in turn.content_blocks:
        tool_id = block.get("id")
        if block.get("type") not in TOOL_CALLS or not _is_id(tool_id) or tool_id in seen:
            continue
        seen.add(tool_id)
        name = str(block.get("name") or "tool")
        result = results.pop(tool_id, None)
        if result is None and name == "file_change":
            result = _file_changes(block.get("input"))
        items.append(_tool_item(turn.turn_id, tool_id, name,
                                bounded_input(block.get("input"), max_bytes), result, max_bytes))
    for tool_id, result in results.items():  # answers to calls of an earlier turn
        items.append(_tool_item(turn.turn_id, tool_id, None, None, result, max_bytes))
    return items


def _tool_item(turn_id, tool_id, name, tool_input, result, max_bytes):
    output, size, cut = bounded_text(tool_result_text(result.get("content")) if result else "",
                                     max_bytes)
    return {"turn_id": turn_id, "tool_use_id": tool_id, "name": name, "input": tool_input,
            "has_result": result is not None, "is_error": bool(result and result.get("is_error")),
            "output": output, "output_bytes": size, "truncated": cut}


def _file_changes(tool_input):
    """The result of a Codex file change: the changes it names, one `<kind> <path>` a
    line. Codex reports no output for it; its item's status is not kept in the turn."""
    changes = tool_input.get("changes") if isinstance(tool_input, dict) else None
    if not isinstance(changes, list) or not changes:
        return None
    lines = [f"{c.get('kind') or 'change'} {c.get('path') or ''}".rstrip()
             for c in changes if isinstance(c, dict)]
    return {"type": "tool_result", "content": "\n".join(lines), "is_error": False}


def bounded_text(text, max_bytes):
    """(text, its UTF-8 size, whether it was cut): a text over `max_bytes` keeps its first
    and last parts (cut on a character) around a marker naming the bytes left out, the
    whole at most `max_bytes`; 0 keeps everything."""
    data = text.encode("utf-8", "surrogatepass")
    if not max_bytes or len(data) <= max_bytes:
        return text, len(data), False
    marker = f"\n…[{len(data)} bytes, {len(data) - max_bytes} cut]…\n"
    half = max(0, (max_bytes - len(marker.encode("utf-8"))) // 2)
    head = data[:half].decode("utf-8", "ignore")
    tail = data[len(data) - half:].decode("utf-8", "ignore") if half else ""
    return f"{head}{marker}{tail}", len(data), True


def bounded_input(tool_input, max_bytes):
    """A tool call's input as kept: whole when its JSON fits in `max_bytes`, else its
    top-level scalar fields (a string cut to INPUT_FIELD_CHARS) and `"truncated": true`."""
    if tool_input is None:
        return {}
    size = len(json.dumps(tool_input, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    if not max_bytes or size <= max_bytes:
        return tool_input
    kept = {}
    if isinstance(tool_input, dict):
        for key, value in tool_input.items():
            if isinstance(value, str):
                kept[key] = value if len(value) <= INPUT_FIELD_CHARS else value[:INPUT_FIELD_CHARS] + "…"
            elif isinstance(value, (int, float, bool)) or value is None:
                kept[key] = value
            if len(kept) >= 32:
                break
    return {**kept, "truncated": True, "input_bytes": size}


def _is_id(value):
    return isinstance(value, str) and bool(value)
