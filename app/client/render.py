"""`turnlog follow`'s terminal view of live events: text as it streams, a line per tool
call named by its main argument (`> Bash(python -m pytest -q)`, `> Edit(app.py)`), each
tool result shown by its last meaningful lines (where a test summary or an error sits),
thinking left out."""
import json
import re

RESULT_PREVIEW = 100
INPUT_PREVIEW = 120
RESULT_LINES = 3  # the most lines of a tool result shown
# The argument that names a tool call best, first found wins (Claude's Bash has a command
# and a description; Edit, Write and Read a file_path; Grep a pattern...).
MAIN_ARGUMENTS = ("command", "cmd", "file_path", "path", "notebook_path", "pattern", "url",
                  "query", "description", "prompt")
# Rulers around a line ("==== 1 failed, 40 passed in 0.52s ====") say nothing themselves.
RULER = re.compile(r"^\s*(?:[=\-_*#~+]{3,}\s*)?(.*?)(?:\s*[=\-_*#~+]{3,})?\s*$")


class Renderer:
    """Turns `/events` (or, with `raw`, `/stream`) events into terminal text via `out(text)`
    (stdout) and `err(text)` (a raw stderr line)."""

    def __init__(self, out, err=None, raw=False):
        self.out = out
        self.err = err or out
        self.raw = raw
        self._kinds = {}  # (turn_id, block_id) -> kind
        self._shown = {}  # (turn_id, block_id) -> text already printed
        self._mid_line = False

    def handle(self, event):
        data = json.loads(event.data) if event.data else {}
        if event.event == "output":
            (self.err if data.get("stream") == "stderr" else self.out)(data.get("payload", "") + "\n")
        elif event.event == "reset":
            self._line(f"[older output expired; the transcript is at {data.get('transcript')}]")
        elif event.event == "end":
            self._line(f"[session {data.get('status')}, exit code {data.get('exit_code')}]")
        elif not self.raw:
            self._normalized(event.event, data)

    def _normalized(self, name, data):
        key = (data.get("turn_id"), data.get("block_id"))
        if name == "block.started":
            self._kinds[key] = data.get("kind")
        elif name == "block.delta" and self._kinds.get(key) == "text":
            self._text(key, data.get("text", ""))
        elif name == "block.completed":
            self._completed(key, data.get("kind"), data.get("block") or {})

    def _completed(self, key, kind, block):
        if kind == "text":
            text = block.get("text", "")
            shown = self._shown.pop(key, "")
            self._text(key, text[len(shown):] if text.startswith(shown) else "\n" + text)
            self._shown.pop(key, None)
            self._end_line()
        elif kind == "tool_use":
            self._line(f"> {block.get('name', 'tool')}({_preview(_main_argument(block.get('input')), INPUT_PREVIEW)})")
        elif kind == "tool_result":
            for line in _result_lines(block):
                self._line(f"  = {line}")

    def _text(self, key, text):
        if text:
            self._shown[key] = self._shown.get(key, "") + text
            self.out(text)
            self._mid_line = not text.endswith("\n")

    def _line(self, text):
        self._end_line()
        self.out(text + "\n")

    def _end_line(self):
        if self._mid_line:
            self.out("\n")
            self._mid_line = False


def header(session):
    """The line `follow` starts with: which session, of what kind, whose agent, how it is."""
    where = ", ".join(f"{name} {session[key]}" for key, name in (("machine", "machine"),
                                                                  ("user_id", "owner"))
                      if session.get(key))
    exit_code = session.get("exit_code")
    status = session.get("status", "?") + (f" (exit code {exit_code})" if exit_code is not None else "")
    return (f"session {session.get('session_id')}: {session.get('session_type')},"
            f" {session.get('provider')}, {status}" + (f"; {where}" if where else ""))


def failure_lines(session):
    """The lines `follow` ends a failed session with: its exit code, why the agent never
    ran (when its runner said), and its last stderr lines."""
    lines = [f"session failed with exit code {session.get('exit_code')}"]
    if session.get("failure_reason"):
        lines.append(f"  {session['failure_reason']}")
    tail = session.get("stderr_tail") or []
    if tail:
        lines.append("  last lines on stderr:")
        lines.extend(f"  | {line}" for line in tail)
    return lines


def _main_argument(value):
    """The input a call is best named by: its main argument when it has one."""
    if isinstance(value, dict):
        for key in MAIN_ARGUMENTS:
            if isinstance(value.get(key), str) and value[key].strip():
                return value[key]
        if len(value) == 1:
            return next(iter(value.values()))  # a lone argument reads best bare
    return value


def _preview(value, limit):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _result_lines(block):
    """The lines a result is shown by: all of a short one; of a longer one, how many came
    before and its last RESULT_LINES meaningful lines, rulers trimmed. An error's first
    shown line says so."""
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    lines = [line for line in text.splitlines() if any(c.isalnum() for c in line)]
    # rulers trimmed on the shown lines only, each cut first: agent output may be huge
    shown = [_preview(RULER.match(line[:RESULT_PREVIEW * 4]).group(1), RESULT_PREVIEW)
             for line in lines[-RESULT_LINES:]] or [""]
    if block.get("is_error"):
        shown[0] = f"error: {shown[0]}".rstrip()
    earlier = len(lines) - RESULT_LINES
    return ([f"... (+{earlier} earlier line{'s' if earlier > 1 else ''})"] if earlier > 0 else []) + shown
