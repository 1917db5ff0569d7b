"""Gemini CLI `--output-format stream-json` lines as `StreamEvent`s.

Assistant text arrives as `delta: true` chunks with no message id; each becomes
a text block flagged `"delta": true`, and a turn joins a run of such blocks
with nothing in between (`normalized_blocks` in transcript_turn.py). Gemini
lines carry no id of their own, but each has a `timestamp` (milliseconds): a line
is named by its timestamp and its text, so a line sent again under a new seq is
known again. A line without a timestamp is named by its place (replay.py).
"""
import hashlib

from app.providers import control_lines
from app.providers.decode import parse_with
from app.providers.decode import text_of
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TOOL_RESULTS
from app.transcript.event_types import StreamEvent
from app.transcript.event_types import ignored

# Result statistics worth keeping with the turn they close.
STATS_FIELDS = ("total_tokens", "input_tokens", "output_tokens", "cached", "input",
                "duration_ms", "tool_calls")


def parse_line(line):
    """Turn one raw Gemini stream-json line into a `StreamEvent`; never raises."""
    return parse_with(line, PARSERS, identify=line_identity)


def line_identity(obj, line):
    """`gemini:<timestamp>:<hash of the line>` for a line with a timestamp, else None."""
    stamp = obj.get("timestamp")
    if not isinstance(stamp, str) or not stamp:
        return None
    digest = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"gemini:{stamp[:40]}:{digest}"


def parse_init(obj):
    """The session's first line: a system note naming the model."""
    model = text_of(obj.get("model"))
    details = f"model={model}" if model else "no details"
    return StreamEvent(SYSTEM, text=f"Session started: {details}", info={"subtype": "init"})


def parse_message(obj):
    """An assistant message (or a delta of one); the user's prompt echo is ignored."""
    if obj.get("role") != "assistant":
        return ignored("not_assistant")
    text = _content_text(obj.get("content"))
    if not text:
        return ignored("empty_message")
    block = {"type": "text", "text": text}
    if obj.get("delta") is True:
        block["delta"] = True
    return StreamEvent(ASSISTANT, (block,))


def parse_tool_use(obj):
    """A tool call, as a tool_use block."""
    parameters = obj.get("parameters")
    block = {"type": "tool_use", "id": obj.get("tool_id"), "name": obj.get("tool_name"),
             "input": parameters if parameters is not None else {}}
    return StreamEvent(ASSISTANT, (block,))


def parse_tool_result(obj):
    """A tool's outcome: its output, or its error's message when it failed."""
    is_error = obj.get("status") == "error"
    error = obj.get("error")
    if is_error and isinstance(error, dict):
        content = text_of(error.get("message"))
    else:
        content = obj.get("output") if obj.get("output") is not None else ""
    block = {"type": "tool_result", "tool_use_id": obj.get("tool_id"), "content": content,
             "is_error": is_error}
    return StreamEvent(TOOL_RESULTS, (block,))


def parse_error(obj):
    """A warning or error from the CLI itself: a system note `<Severity>: <message>`."""
    message = text_of(obj.get("message")).strip()
    severity = text_of(obj.get("severity")).strip() or "error"
    text = f"{severity.capitalize()}: {message}" if message else ""
    return StreamEvent(SYSTEM, text=text, info={"subtype": "error"})


def parse_result(obj):
    """The end of a turn: its status and statistics."""
    ok = obj.get("status") == "success"
    info = {"subtype": "success" if ok else "error", "is_error": not ok}
    stats = obj.get("stats")
    if isinstance(stats, dict):
        info.update({key: stats[key] for key in ("duration_ms",) if key in stats})
        info["stats"] = {key: stats[key] for key in STATS_FIELDS if key in stats}
    error = obj.get("error")
    if not ok and isinstance(error, dict):
        message = text_of(error.get("message"))
        if message:
            info["result"] = message
        if text_of(error.get("type")):
            info["error_type"] = error["type"]
    return StreamEvent(RESULT, info=info)


def _content_text(content):
    """Message content as text: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


PARSERS = {
    "init": parse_init,
    "message": parse_message,
    "tool_use": parse_tool_use,
    "tool_result": parse_tool_result,
    "error": parse_error,
    "result": parse_result,
    **control_lines.NEUTRAL_PARSERS,
}
