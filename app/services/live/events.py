"""Follow a session's live events (GET .../events): replay from an event id, then tail.

The events were derived and stored by ingest (app/transcript/live_events.py),
so this only reads them: the buffer rows that have any, then the completion's
own (session_final_events), as a feed (`EventFeed`) that `streaming.follow` takes
through the same replay and tail as the raw output, with its retention, `Reset`,
heartbeats and wake-ups. An event's id is `<line index>.<ordinal>`; a cursor names
the last event a client has.
"""
import time
from dataclasses import dataclass

from app.core.errors import InvalidEventId
from app.formats import event_lines
from app.services import streaming
from app.services.access import OPEN
from app.services.sessions import readable_session

MAX_INDEX = 2**63 - 1
MAX_ORDINAL = 2**31 - 1


@dataclass(frozen=True)
class EventCursor:
    """After event (`line`, `ordinal`); `ordinal` None means after every event of `line`."""

    line: int
    ordinal: int | None = None

    def admits(self, line, ordinal):
        """True for an event that comes after this cursor."""
        if line != self.line:
            return line > self.line
        return self.ordinal is not None and ordinal > self.ordinal


FROM_START = EventCursor(streaming.FROM_START)


@dataclass(frozen=True, eq=False)
class Events:
    """Consecutive live events, in order, as (id, name, data JSON text) triples. The
    events of a page the live hub shares are one Events for every follower (the web
    layer frames it once); compared by identity, as `streaming.Page` is."""

    events: list


@dataclass(frozen=True)
class EventsEnd:
    status: str
    exit_code: int | None
    last_event_id: str | None


def parse_cursor(raw):
    """An EventCursor from `<line>.<ordinal>` or a bare `<line>` (-1: from the start);
    InvalidEventId for anything else."""
    if raw is None or raw == "":
        return FROM_START
    line, dot, ordinal = raw.partition(".")
    try:
        cursor = EventCursor(_number(line), _number(ordinal) if dot else None)
    except ValueError:
        raise InvalidEventId("the cursor must be an event id: <line>.<n> or <line>",
                            {"cursor": raw}) from None
    if not (streaming.FROM_START <= cursor.line <= MAX_INDEX
            and (cursor.ordinal is None or 0 <= cursor.ordinal <= MAX_ORDINAL)):
        raise InvalidEventId("the cursor is out of range", {"cursor": raw})
    return EventCursor(cursor.line, None) if cursor.line == -1 else cursor


def open_events(session_id, new_uow, *, caller=OPEN):
    """Raises SessionNotFound, before any streaming, unless `caller` may read it."""
    with new_uow() as uow:
        readable_session(uow, session_id, caller)


class EventFeed(streaming.Feed):
    """The live events of a session's buffer after an EventCursor: the lines', then
    the completion's. A cursor inside a line's events reads that line again and sends
    the events after it."""

    def __init__(self, session_id, cursor, new_uow, *, wait=None, shared=None, sleep=time.sleep):
        start = cursor.line if cursor.ordinal is None else cursor.line - 1
        super().__init__(session_id, start, new_uow, wait=wait, shared=shared, sleep=sleep)
        self.after = cursor

    def read_page(self, uow, limit, max_bytes):
        return read_event_page(uow, self.session_id, self.cursor, limit, max_bytes)

    def page(self, events):
        return _events(events, self.after)

    def shared_page(self, live):
        rows = live.feed(event_rows)
        if not rows:
            return None
        if rows[0][0] > self.after.line:  # all of it: the same for every follower
            return live.feed(all_events)
        return _events(rows, self.after)

    def last_index(self, session):
        """A completed session's events end with its completion's, numbered with the
        next_event_index it completed at."""
        return session.next_event_index

    def end(self, session):
        return EventsEnd(session.status, session.exit_code, last_event_id(self.session_id, self.new_uow))


def _events(rows, cursor):
    return Events([(f"{line}.{n}", name, data) for line, text in rows
                   for n, (name, data) in enumerate(event_lines.decode(text))
                   if cursor.admits(line, n)])


def event_rows(rows):
    """The (index, stored live events) of a live hub page's rows that have any."""
    return [(index, live) for index, _, live in rows if live is not None]


def all_events(rows):
    """Every live event of a live hub page's rows."""
    return _events(event_rows(rows), FROM_START)


def read_event_page(uow, session_id, cursor, limit, max_bytes=0):
    """Up to `limit` (index, stored events) after `cursor`, no more than fit in
    `max_bytes`: the lines', then the completion's; and whether more may follow at once.
    The completion is read first: when it is there, every line was committed before
    it, so the lines read next are all of them (READ COMMITTED)."""
    final = uow.final_events.get(session_id)
    rows, cut = uow.outputs.list_live_after(session_id, cursor, limit, max_bytes)
    more = cut or len(rows) >= limit
    if not more and final is not None and final[0] > cursor:
        rows.append(final)
    return rows, more


def last_event_id(session_id, new_uow):
    """The id of the session's last live event, or None when it has none."""
    with new_uow() as uow:
        row = uow.final_events.get(session_id) or uow.outputs.last_live(session_id)
    if row is None:
        return None
    return f"{row[0]}.{len(event_lines.decode(row[1])) - 1}"


def _number(text):
    """A plain decimal integer (int() alone would take "+1", " 1" and "1_0")."""
    body = text[1:] if text.startswith("-") else text
    if not body.isascii() or not body.isdigit() or len(body) > 20:
        raise ValueError(text)
    return int(text)
