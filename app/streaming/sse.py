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

    Written out by hand because it is the replay hot path. Only the payload can
    hold characters JSON must escape; `stream` is one of three words (a CHECK
    constraint) and `created_at` is turnlog's own fixed ISO-8601 text, so both
    are written as they are. The result equals json.dumps of the same dict.
    """
    return "".join(
        f'id: {index}\nevent: output\ndata: {{"event_index":{index},"stream":"{stream}",'
        f'"payload":{json_string(payload)},"created_at":"{created_at}"}}\n\n'
        for index, stream, payload, created_at in rows
    )
