"""The JSON each buffered output line is streamed as, built once when the line is stored.

Replay sends this text as the `data:` of an `output` event. Escaping a payload as
a JSON string cost more than reading its row back (bench/stream.py), so ingest
pays it once per line instead of every replay paying it again.
"""
from app.formats import fast_json


def event_json(event_index, stream, payload, created_at):
    """`{"event_index":…,"stream":…,"payload":…,"created_at":…}`, compact, on one line,
    reading back (json.loads) to that dict.

    Only the payload can hold characters JSON must escape: `stream` is one of three
    words (a CHECK constraint) and `created_at` is turnlog's own ISO-8601 text. The
    payload is written by orjson (fast_json.dumps_text), much faster than the stdlib's
    ASCII escaping (docs/performance.md, JSON): non-ASCII characters stay as they are (a lone
    surrogate, which orjson refuses, is escaped by the stdlib), as in the live events.
    """
    return (f'{{"event_index":{event_index},"stream":"{stream}",'
            f'"payload":{fast_json.dumps_text(payload)},"created_at":"{created_at}"}}')
