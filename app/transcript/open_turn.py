"""The open turn as GET /api/remote/sessions/<id> shows it: provisional, never counted.

Read from what ingest stored (the turn snapshot and its saved parts), so it is
the same on every worker and after a restart. Pure.
"""
from app.transcript.transcript_turn import normalized_blocks


def has_open_turn(snapshot):
    """True when the stored snapshot holds a turn still accumulating."""
    if not snapshot:
        return False
    return bool(snapshot.get("live") or snapshot["turn"].get("saved_parts"))


def open_turn(snapshot, parts):
    """{turn_id, started_at, event_index, visible_text, content_blocks} of the open
    turn (blocks in arrival order, as they will be flushed), or None.

    Its id is the live events' turn_id; a turn begun before there were live events
    (migration 0011) is named by its first line, as the live events would name it.
    """
    if not has_open_turn(snapshot):
        return None
    header, live = snapshot["turn"], snapshot.get("live") or {}
    blocks = normalized_blocks(parts)
    first = live.get("event_index", header.get("first_event_index"))
    return {
        "turn_id": live.get("turn_id") or f"t{first}",
        "started_at": live.get("started_at") or header.get("started_at"),
        "event_index": first,
        "visible_text": "\n\n".join(b["text"] for b in blocks if b.get("type") == "text"),
        "content_blocks": blocks,
    }
