"""How a line's live events are stored and read back: one event per text line.

`<name> <data as compact JSON>`: the JSON escapes every line break (LF and CR),
so a stored event is one line and its data is the SSE `data:` as it stands.
Non-ASCII characters are mostly written as they are, not escaped (when they
are: app/formats/fast_json.py). Replay splits the text and sends it; nothing is
parsed or escaped on read.
"""
from app.formats import fast_json

TURN_COMPLETED = "turn.completed"


def encode(events, row_ids=None):
    """Stored text of (name, data) events, or None for none. `row_ids` ({turn key:
    row id}) fills in the `message_id` of each turn.completed whose row was written."""
    if not events:
        return None
    row_ids = row_ids or {}
    lines = []
    for name, data in events:
        if name == TURN_COMPLETED:
            data = dict(data, message_id=row_ids.get(data.get("transcript_turn_id")))
        lines.append(f"{name} {fast_json.dumps(data)}")
    return "\n".join(lines)


def decode(text):
    """(name, data JSON text) of each stored event, in order."""
    return [tuple(line.split(" ", 1)) for line in text.split("\n")] if text else []
