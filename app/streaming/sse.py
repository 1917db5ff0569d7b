"""Server-Sent Events framing (WHATWG HTML, "Server-sent events"). Pure functions."""
import json
from json.encoder import encode_basestring_ascii as json_string


def event(name, data, event_id=None):
    """One event: optional `id:`, `event:`, and `data:` lines (one per line of data)."""
    lines = [] if event_id is None else [f"id: {event_id}"]
    lines.append(f"event: {name}")
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    lines.extend(f"data: {line}" for line in text.split("\n"))
    return "\n".join(lines) + "\n\n"


def comment(text=""):
    """A comment line: ignored by EventSource, keeps proxies and the socket alive."""
    return f": {text}\n\n" if text else ":\n\n"


def retry(milliseconds):
    """How long a disconnected EventSource waits before it reconnects."""
    return f"retry: {int(milliseconds)}\n\n"


def output_events(rows):
    """The `output` events of (event_index, stream, payload, created_at) rows, as one string.

    Written out by hand because it is the replay hot path: a JSON string
    encoder on the three text fields is several times faster than json.dumps
    of a dict per event, and gives the same JSON (no raw newline can occur).
    """
    return "".join(
        f"id: {index}\nevent: output\ndata: {{\"event_index\":{index},"
        f"\"stream\":{json_string(stream)},\"payload\":{json_string(payload)},"
        f"\"created_at\":{json_string(created_at)}}}\n\n"
        for index, stream, payload, created_at in rows
    )
