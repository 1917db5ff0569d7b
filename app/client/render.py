"""`turnlog follow`'s terminal view of live events: text as it streams, a line per tool
call, tool results collapsed to their first line, thinking left out."""
import json

RESULT_PREVIEW = 100
INPUT_PREVIEW = 120


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
            self._line(f"> {block.get('name', 'tool')}({_preview(block.get('input'), INPUT_PREVIEW)})")
        elif kind == "tool_result":
            self._line(f"  = {_result_summary(block)}")

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


def _preview(value, limit):
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))  # a lone argument (a command, a path) reads best bare
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _result_summary(block):
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    lines = text.strip().splitlines() or [""]
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    error = "error: " if block.get("is_error") else ""
    return f"{error}{_preview(lines[0], RESULT_PREVIEW)}{more}"
