"""The JSON each buffered output line is streamed as, built once when the line is stored.

Replay sends this text as the `data:` of an `output` event. Escaping a payload as
a JSON string cost more than reading its row back (bench/stream.py), so ingest
pays it once per line instead of every replay paying it again.
"""
from json.encoder import encode_basestring_ascii as json_string


def event_json(event_index, stream, payload, created_at):
    """`{"event_index":…,"stream":…,"payload":…,"created_at":…}`, compact, equal to
    json.dumps of that dict with separators=(",", ":").

    Only the payload can hold characters JSON must escape: `stream` is one of three
    words (a CHECK constraint) and `created_at` is turnlog's own ISO-8601 text.
    """
    return (f'{{"event_index":{event_index},"stream":"{stream}",'
            f'"payload":{json_string(payload)},"created_at":"{created_at}"}}')
