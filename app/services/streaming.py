"""Follow a session's output buffer: replay from a cursor, then tail it live.

`follow` yields plain records (Page, Reset, Heartbeat, End); the web layer
frames them as Server-Sent Events and writes each at once. Every database read
is its own short unit of work, taken from `new_uow()`, so nothing is held open
while the stream waits.
"""
import time
from dataclasses import dataclass
from dataclasses import field

from app.core.clock import to_iso
from app.core.clock import utc_now
from app.services import tokens
from app.services.access import OPEN
from app.services.sessions import readable_session

FROM_START = -1  # the cursor of a client that has seen nothing


@dataclass(frozen=True)
class StreamSettings:
    page_size: int = 5000
    page_bytes: int = 4 * 1024 * 1024  # a page also stops at this many bytes (its first row always comes)
    poll_seconds: float = 0.25
    heartbeat_seconds: float = 15.0
    auth_check_seconds: float = 5.0  # how often the caller's credentials are looked up again
    max_seconds: float = 3600.0  # then the stream ends and the client reconnects


@dataclass(frozen=True)
class Page:
    """Consecutive buffered events, in order, as (event_index, event JSON) pairs:
    the JSON is the event's `data` (app/formats/output_frames.py). Sent as soon
    as it is read. A page the live hub shares is handed to every caught-up follower
    of its feed in the process (`shared`), so `memo` (the web layer's framed text) is
    made once; a page read for one follower (a replay) is framed as it is written."""

    events: list
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    shared: bool = field(default=False, compare=False)  # the live hub's, for every follower


@dataclass(frozen=True)
class Reset:
    """The client's cursor points at events that have expired from the buffer."""

    requested_after: int
    oldest_event_index: int


@dataclass(frozen=True)
class Heartbeat:
    pass


@dataclass(frozen=True)
class End:
    status: str
    exit_code: int | None
    last_event_index: int | None


def resume_cursor(session_id, new_uow, *, after=None, client_id=None, caller=OPEN):
    """Where a stream starts: an explicit cursor, else the client's stored one, else the start.

    Raises SessionNotFound, when there is no such session or `caller` may not read
    it, before any streaming begins.
    """
    with new_uow() as uow:
        readable_session(uow, session_id, caller)
        if after is None and client_id:
            after = uow.stream_cursors.last_delivered(session_id, client_id)
    return FROM_START if after is None else after


def read_output_page(uow, session_id, cursor, limit, max_bytes=0):
    """The `output` events after `cursor`, at most `limit` and no more than fit in
    `max_bytes`: what GET .../stream sends. (events, True when more may follow at once)."""
    events, cut = uow.outputs.list_after(session_id, cursor, limit, max_bytes)
    return events, cut or len(events) == limit


def output_rows(rows):
    """The `output` page of a live hub page's rows (index, event JSON, live events)."""
    return Page([(index, data) for index, data, _ in rows], shared=True)


def last_output_index(session):
    """The index after which a completed session's buffer holds nothing more."""
    return session.next_event_index - 1


def follow(session_id, cursor, new_uow, *, settings=StreamSettings(), client_id=None,
           caller=OPEN, sleep=time.sleep, monotonic=time.monotonic, clock=utc_now, wait=None,
           shared=None, read_page=read_output_page, last_index=last_output_index,
           from_rows=output_rows):
    """Yield every buffered event after `cursor` once, in order, then tail the buffer
    until the session ends (End) or `settings.max_seconds` pass.

    `read_page(uow, session_id, cursor, limit, max_bytes)` reads up to `limit` (index,
    data) pairs after `cursor`, no more than fit in `max_bytes` (settings.page_bytes; the
    first always comes), and says whether it stopped at either bound; `last_index(session)`
    says where a completed session's pages end: the raw output by default, the live events for GET .../events.

    Between reads the stream waits: with `wait(session_id, cursor, timeout)` (a
    `live_hub.Watch`, one wake-up per process and session for every follower)
    until something follows `cursor` or the next heartbeat is due; without it, it
    sleeps `settings.poll_seconds` and reads again. With `shared(session_id, cursor)`
    (the same Watch), a page the hub already read for every follower and that goes
    on right after `cursor` is taken from there, as `from_rows(page.rows)`, instead
    of reading it again; anything else (a replay, a gap, the end) is read here.

    A stream lasts long after the request that opened it was authorised: every
    `settings.auth_check_seconds` the caller's credentials (its token, and its sign-in
    when it came with the viewer's cookie) are looked up again, and the stream stops
    without `end` once they no longer work (the reconnect then gets a 401).
    """
    started = last_sent = last_checked = monotonic()
    reread_before_end = woken = False
    while True:
        due = monotonic() - last_checked >= settings.auth_check_seconds
        if caller.token_id is not None and due:
            if not tokens.still_valid(caller, new_uow()):
                return
            last_checked = monotonic()
        live = shared(session_id, cursor) if shared is not None else None
        if live is not None:
            page = live.feed(from_rows)
            cursor = live.last  # past rows this feed has nothing for, too
            if page.events:
                _remember_delivery(new_uow, session_id, client_id, cursor, clock)
                yield page
                last_sent = monotonic()
            woken = False
            now = monotonic()
            if now - started >= settings.max_seconds:
                return
            if shared(session_id, cursor) is None:  # else: the next kept page, at once
                checked = last_checked if caller.token_id is not None else None
                wait(session_id, cursor, _until_due(now, settings, started, last_sent, checked))
            continue
        with new_uow() as uow:
            events, more = read_page(uow, session_id, cursor, settings.page_size,
                                     settings.page_bytes)
            # A full page that starts right after the cursor is all there is to know:
            # nothing before it expired, and more is waiting. Replaying a long buffer
            # then costs one query a page.
            # Any page that starts right after the cursor needs no retention lookup either
            # (a live follower's usual read).
            contiguous = bool(events) and events[0][0] == cursor + 1
            full_run = contiguous and more
            if not full_run:
                session = uow.sessions.get(session_id)
                oldest = None if contiguous else uow.outputs.oldest_index(session_id)
        if not full_run:
            if session is None:
                return  # deleted while streaming: nothing more will come
            # Anything between the cursor and what is retained has expired.
            retained_from = oldest if oldest is not None else session.next_event_index
            if not contiguous and cursor + 1 < retained_from:
                yield Reset(cursor, retained_from)
                cursor = retained_from - 1
                last_sent = monotonic()
                continue
        if events:
            cursor = events[-1][0]
            _remember_delivery(new_uow, session_id, client_id, cursor, clock)
            yield Page(events)
            last_sent = monotonic()
            if more:
                continue  # more is waiting: read on without sleeping
        if session.is_completed:
            last = last_index(session)
            # Under READ COMMITTED (PostgreSQL) the session is read after the events, so
            # lines committed just before the completion can be missing from this read:
            # read once more before `end`. Once only: a hole left by retention (rows
            # pruned out of order) must not keep the stream from ending.
            if cursor < last and not reread_before_end:
                reread_before_end = True
                continue
            yield End(session.status, session.exit_code, last if last >= 0 else None)
            return
        now = monotonic()
        if now - started >= settings.max_seconds:
            return
        if now - last_sent >= settings.heartbeat_seconds:
            yield Heartbeat()
            last_sent = now
        if wait is None or (woken and not events):
            # (A wake-up this read found nothing for, e.g. a hole retention left in
            # the buffer, is not waited on again at once: that would spin.)
            sleep(settings.poll_seconds)
            woken = False
        else:
            checked = last_checked if caller.token_id is not None else None
            woken = wait(session_id, cursor, _until_due(now, settings, started, last_sent, checked))


def _until_due(now, settings, started, last_sent, last_checked):
    """Seconds until the stream must act by itself: a heartbeat, a token check, its end."""
    due = last_sent + settings.heartbeat_seconds
    if last_checked is not None:
        due = min(due, last_checked + settings.auth_check_seconds)
    due = min(due, started + settings.max_seconds)
    return max(0.0, due - now)


def _remember_delivery(new_uow, session_id, client_id, cursor, clock):
    """Record `cursor` for `client_id` before its page is handed on: a client can read
    the page and reconnect before this generator resumes, and must not get it again."""
    if not client_id:
        return
    with new_uow(write=True) as uow:
        uow.stream_cursors.set_last_delivered(session_id, client_id, cursor, to_iso(clock()))
        uow.commit()


def prune_outputs(new_uow, *, batch_size=5000, clock=utc_now):
    """Delete expired buffer rows in short batches; returns how many were deleted.

    Each batch is its own transaction, so ingestion goes on between batches.
    The transcript (session_messages) is never touched.
    """
    now = to_iso(clock())
    total = 0
    while True:
        with new_uow(write=True) as uow:
            deleted = uow.outputs.delete_expired(now, batch_size)
            uow.commit()
        total += deleted
        if deleted < batch_size:
            return total
