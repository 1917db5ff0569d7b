"""Server-Sent Events framing (WHATWG HTML, "Server-sent events"). Pure functions."""
from app.formats import fast_json


def event(name, data, event_id=None):
    """One event: optional `id:`, `event:`, and `data:` lines (one per line of data)."""
    lines = [] if event_id is None else [f"id: {event_id}"]
    lines.append(f"event: {name}")
    # compact JSON as the stored output events hold it (app/formats/output_frames.py)
    text = data if isinstance(data, str) else fast_json.dumps(data)
    lines.extend(f"data: {line}" for line in text.split("\n"))
    return "\n".join(lines) + "\n\n"


def comment(text=""):
    """A comment line: ignored by EventSource, keeps proxies and the socket alive."""
    return f": {text}\n\n" if text else ":\n\n"


def retry(milliseconds):
    """How long a disconnected EventSource waits before it reconnects."""
    return f"retry: {int(milliseconds)}\n\n"


def output_events(events):
    """The `output` events of (event_index, event JSON) pairs, as one string.

    The JSON is stored ready to send (app/formats/output_frames.py) and never
    holds a line break, so each event is one `data:` line written as it is.
    """
    return "".join([f"id: {index}\nevent: output\ndata: {data}\n\n" for index, data in events])

