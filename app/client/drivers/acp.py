"""Agent Client Protocol messages (`gemini --acp`) as `gemini --output-format stream-json`
lines, the vocabulary the server's Gemini parser reads (docs/runner.md, "Gemini").

`Translator` is pure but for its clock: it keeps the tool calls of the running turn, so
each call is announced once (`tool_use`) and closed once (`tool_result`), and it stamps
every line with a strictly increasing millisecond timestamp (the parser names a Gemini
line by its timestamp and text: two equal pieces of text in one millisecond must still
be two lines).
"""
import json
import time
from datetime import datetime
from datetime import timezone

# A tool call's id is "<tool name>__<call id>" in Gemini CLI 0.61; a permission request
# names no tool otherwise, only a kind.
NAME_SEPARATOR = "__"
KIND_NAMES = {"execute": "run_shell_command", "edit": "write_file", "read": "read_file"}
FAILED_STOPS = ("max_tokens", "max_turn_requests", "refusal")


def dumps(record):
    return json.dumps(record, ensure_ascii=False)


def tool_name(tool_call):
    """The tool's name, from its call id, else from its kind."""
    call_id = tool_call.get("toolCallId")
    if isinstance(call_id, str) and NAME_SEPARATOR in call_id:
        return call_id.split(NAME_SEPARATOR, 1)[0]
    kind = tool_call.get("kind")
    return KIND_NAMES.get(kind, kind if isinstance(kind, str) and kind else "tool")


def tool_input(tool_call):
    """What the tool was asked to do: the call's `rawInput` when the agent gives one, else
    what its title and content say (a command's title is the command; an edit has a diff)."""
    raw = tool_call.get("rawInput")
    if isinstance(raw, dict):
        return raw
    title = tool_call.get("title") if isinstance(tool_call.get("title"), str) else ""
    if tool_call.get("kind") == "execute" and title:
        return {"command": title}
    for part in _parts(tool_call):
        if part.get("type") == "diff" and isinstance(part.get("path"), str):
            found = {"file_path": part["path"], "content": part.get("newText") or ""}
            if part.get("oldText"):
                found["old_content"] = part["oldText"]
            return found
    found = {"title": title} if title else {}
    paths = [spot.get("path") for spot in tool_call.get("locations") or []
             if isinstance(spot, dict) and isinstance(spot.get("path"), str)]
    if paths:
        found["locations"] = paths
    return found


def content_text(tool_call):
    """The text a tool call's content holds (what reached the client of its output)."""
    texts = []
    for part in _parts(tool_call):
        inner = part.get("content")
        if part.get("type") == "content" and isinstance(inner, dict) \
                and isinstance(inner.get("text"), str):
            texts.append(inner["text"])
        elif part.get("type") == "diff" and isinstance(part.get("path"), str):
            texts.append(f"{part['path']}: {len(part.get('newText') or '')} characters written")
    return "\n".join(texts)


def _parts(tool_call):
    return [part for part in tool_call.get("content") or [] if isinstance(part, dict)]


class Translator:
    """One agent session's lines; `clock` gives seconds since the epoch."""

    def __init__(self, clock=time.time):
        self.clock = clock
        self._last_ms = 0
        self.announced = set()  # tool call ids with a tool_use line this turn
        self.closed = set()  # ... and with a tool_result line
        self.tool_calls = 0

    def line(self, kind, **fields):
        ms = max(int(self.clock() * 1000), self._last_ms + 1)
        self._last_ms = ms
        stamp = datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        return dumps({"type": kind, "timestamp": f"{stamp}.{ms % 1000:03d}Z", **fields})

    def init(self, session_id, model):
        return self.line("init", session_id=session_id, model=model or "unknown")

    def new_turn(self):
        self.announced, self.closed, self.tool_calls = set(), set(), 0

    def update(self, update):
        """The lines of one `session/update` (none for what stream-json has no line for:
        thoughts, which headless runs do not print either, plans, commands, modes)."""
        kind = update.get("sessionUpdate")
        content = update.get("content")
        if kind == "agent_message_chunk" and isinstance(content, dict) \
                and isinstance(content.get("text"), str) and content["text"]:
            return [self.line("message", role="assistant", content=content["text"], delta=True)]
        if kind == "tool_call":
            lines = self.tool_use(update)
            return lines + self.tool_result(update) if update.get("status") in (
                "completed", "failed") else lines
        if kind == "tool_call_update":
            return self.tool_use(update) + self.tool_result(update)
        return []

    def tool_use(self, tool_call):
        call_id = tool_call.get("toolCallId")
        if not isinstance(call_id, str) or call_id in self.announced:
            return []
        self.announced.add(call_id)
        self.tool_calls += 1
        return [self.line("tool_use", tool_name=tool_name(tool_call), tool_id=call_id,
                          parameters=tool_input(tool_call))]

    def tool_result(self, tool_call, *, error=None):
        """The call's end: when its status says it ended (or `error` says how it failed)."""
        call_id = tool_call.get("toolCallId")
        status = "failed" if error else tool_call.get("status")
        if not isinstance(call_id, str) or call_id in self.closed \
                or status not in ("completed", "failed"):
            return []
        self.closed.add(call_id)
        if status == "failed":
            message = error or content_text(tool_call) or "the tool failed"
            return [self.line("tool_result", tool_id=call_id, status="error",
                              error={"type": "tool_error", "message": message})]
        return [self.line("tool_result", tool_id=call_id, status="success",
                          output=content_text(tool_call))]

    def result(self, answer, duration_ms):
        """The `result` line closing a turn from the `session/prompt` answer: its JSON-RPC
        `result` (`stopReason`, `_meta.quota.token_count`) or its `error`."""
        stats = {"duration_ms": duration_ms, "tool_calls": self.tool_calls}
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            return self.line("result", status="error", stats=stats, error={
                "type": "acp_error", "message": str(error.get("message") or error)})
        result = answer.get("result") if isinstance(answer.get("result"), dict) else {}
        counts = ((result.get("_meta") or {}).get("quota") or {}).get("token_count") or {}
        tokens = {key: counts[key] for key in ("input_tokens", "output_tokens")
                  if isinstance(counts.get(key), int)}
        if tokens:
            stats.update(tokens, total_tokens=sum(tokens.values()))
        stop = result.get("stopReason")
        if stop in FAILED_STOPS:
            return self.line("result", status="error", stats=stats,
                             error={"type": stop, "message": f"the turn stopped: {stop}"})
        return self.line("result", status="success", stats=stats)
