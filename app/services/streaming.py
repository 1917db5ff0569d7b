"""Follow a session's output buffer: replay from a cursor, then tail it live.

A stream is one `Feed` (where a follower stands in the buffer, how it reads a page
there and how it waits when there is nothing to read) taken through two phases by
`follow`: the replay sends what is stored after the cursor, page after page, with a
`Reset` first when the start has expired; the tail then waits for more and sends it
the same way, with heartbeats while idle, until the session ends. The records
(Page, Reset, Heartbeat, End) are plain values: the web layer frames them as
Server-Sent Events and writes each at once. Every database read is its own short
unit of work, taken from `new_uow()`, so nothing is held open while the stream waits.
"""
import time
from dataclasses import dataclass

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


@dataclass(frozen=True, eq=False)
class Page:
    """Consecutive buffered events, in order, as (event_index, event JSON) pairs:
    the JSON is the event's `data` (app/formats/output_frames.py). Sent as soon
    as it is read. A `shared` page is the live hub's, the same object for every
    caught-up follower of its feed in the process (the web layer frames it once for
    all of them); any other was read for one follower. Compared by identity: two
    reads are two pages."""

    events: list
    shared: bool = False


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


class Feed:
    """One follower's place in a session's buffer (`cursor`: the last index handed on),
    how it reads a page after it, and how it waits when it has read everything. This
    one reads the `output` events (GET .../stream); a feed of other columns of the
    same buffer overrides `read_page`, `page`, `shared_page`, `last_index` and `end`
    (app/services/live/events.py, GET .../events).

    `wait(session_id, cursor, timeout)` and `shared(session_id, cursor)` are a live
    hub Watch's: with them the feed sleeps until the hub wakes it, and takes the pages
    the hub read once for every follower; without them it polls. With `client_id`,
    each cursor handed on is stored for the client to resume from.
    """

    def __init__(self, session_id, cursor, new_uow, *, client_id=None, wait=None, shared=None,
                 sleep=time.sleep, clock=utc_now):
        self.session_id = session_id
        self.cursor = cursor
        self.new_uow = new_uow
        self._client_id = client_id
        self._wait = wait
        self._shared = shared
        self._sleep = sleep
        self._clock = clock
        self._woken = False  # the last wait ended with a wake-up

    def read_page(self, uow, limit, max_bytes):
        """Up to `limit` (index, data) pairs after the cursor, no more than fit in
        `max_bytes` (the first always comes), and True when it stopped at either bound:
        more may follow at once."""
        events, cut = uow.outputs.list_after(self.session_id, self.cursor, limit, max_bytes)
        return events, cut or len(events) == limit

    def page(self, events):
        """The record of the pairs `read_page` returned."""
        return Page(events)

    def shared_page(self, live):
        """The record of the hub's page `live` (a `hub.LivePage`), made once for every
        follower of this feed; None when none of its rows is this feed's."""
        return live.feed(_output_page)

    def last_index(self, session):
        """Where a completed session's pages end."""
        return session.next_event_index - 1

    def end(self, session):
        """The record that ends the stream of a completed session."""
        last = self.last_index(session)
        return End(session.status, session.exit_code, last if last >= 0 else None)

    def kept(self):
        """The hub's page that goes on from the cursor, or None (then the feed reads)."""
        return None if self._shared is None else self._shared(self.session_id, self.cursor)

    def take(self, live):
        """Move past the hub's page `live` (past rows this feed has nothing in, too);
        its record, or None."""
        self.cursor = live.last
        self._woken = False
        return self.shared_page(live)

    def delivered(self):
        """Record the cursor for the client before its page is handed on: a client can
        read the page and reconnect before the stream resumes, and must not get it again."""
        if not self._client_id:
            return
        with self.new_uow(write=True) as uow:
            uow.stream_cursors.set_last_delivered(self.session_id, self._client_id, self.cursor,
                                                  to_iso(self._clock()))
            uow.commit()

    def idle(self, timeout, poll_seconds, found):
        """Wait for rows after the cursor: until the hub wakes the feed, or `timeout`
        seconds. Without a hub it sleeps one poll interval; so it does after a wake-up
        that the read after it `found` nothing for (a hole retention left in the
        buffer): waiting on that again at once would spin."""
        if self._wait is None or (self._woken and not found):
            self._sleep(poll_seconds)
            self._woken = False
        else:
            self._woken = self._wait(self.session_id, self.cursor, timeout)

    def wait_for_hub(self, timeout):
        """After the hub's page: wait until the hub has read more, or `timeout` seconds."""
        self._wait(self.session_id, self.cursor, timeout)


def _output_page(rows):
    """The `output` page of a live hub page's rows (index, event JSON, live events)."""
    return Page([(index, data) for index, data, _ in rows], shared=True) if rows else None


def follow(feed, *, settings=StreamSettings(), caller=OPEN, monotonic=time.monotonic):
    """Yield every record after `feed.cursor` once, in order: the replay sends what is
    stored, then the tail waits for more and sends it, until the session ends (the
    feed's end record) or `settings.max_seconds` pass. While idle the tail sends a
    Heartbeat every `settings.heartbeat_seconds`.

    A stream lasts long after the request that opened it was authorised: every
    `settings.auth_check_seconds` the caller's credentials (its token, and its sign-in
    when it came with the viewer's cookie) are looked up again, and the stream stops
    without an end once they no longer work (the reconnect then gets a 401).
    """
    stream = _Stream(feed, settings, caller, monotonic)
    outcome = yield from stream.replay()
    yield from stream.tail(outcome)


# What a stream does once a read has sent what it found.
_AGAIN = "again"  # read again at once: more is waiting
_IDLE = "idle"  # caught up: heartbeat if due, then wait for more
_HUB = "hub"  # caught up on the hub's pages: wait until it reads more
_STOP = "stop"  # ended, or over: the stream is done


class _Stream:
    """One run of `follow`: its feed, its time keeping and how its reads went."""

    def __init__(self, feed, settings, caller, monotonic):
        self.feed = feed
        self.settings = settings
        self.caller = caller
        self.monotonic = monotonic
        self.started = self.last_sent = self.last_checked = monotonic()
        self.reread_before_end = False
        self.found = False  # the last read from the database had rows

    def replay(self):
        """Send what follows the cursor, page after page, until nothing more is
        waiting; returns what to do next (_IDLE, _HUB or _STOP)."""
        while True:
            if not self._still_authorised():
                return _STOP
            live = self.feed.kept()
            if live is not None:
                record = self.feed.take(live)
                # _hand_on, written out: every caught-up follower's pages come this way
                if record is not None:
                    self.feed.delivered()
                    if record.events:
                        yield record
                    self.last_sent = self.monotonic()
                if self.monotonic() - self.started >= self.settings.max_seconds:
                    return _STOP
                if self.feed.kept() is None:  # else: the next kept page, at once
                    return _HUB
                continue
            outcome = yield from self._read()
            if outcome != _AGAIN:
                return outcome

    def tail(self, outcome):
        """Wait for more, and replay it, until the stream is done."""
        while outcome != _STOP:
            now = self.monotonic()
            if outcome == _HUB:
                self.feed.wait_for_hub(self._until_due(now))
            else:
                if now - self.started >= self.settings.max_seconds:
                    return
                if now - self.last_sent >= self.settings.heartbeat_seconds:
                    yield Heartbeat()
                    self.last_sent = now
                self.feed.idle(self._until_due(now), self.settings.poll_seconds, self.found)
            outcome = yield from self.replay()

    def _read(self):
        """One page from the database, and what follows from it: a Reset past rows that
        have expired, the end of a completed session, or more to read at once."""
        events, more, standing = self._read_page()
        self.found = bool(events)
        if standing is None:  # a full page right after the cursor: nothing else to know
            yield from self._send_read(events)
            return _AGAIN
        session, retained_from = standing
        if session is None:
            return _STOP  # deleted while streaming: nothing more will come
        cursor = self.feed.cursor
        if not (events and events[0][0] == cursor + 1) and cursor + 1 < retained_from:
            yield Reset(cursor, retained_from)
            self.feed.cursor = retained_from - 1
            self.last_sent = self.monotonic()
            return _AGAIN
        if events:
            yield from self._send_read(events)
            if more:
                return _AGAIN  # more is waiting: read on without waiting
        return (yield from self._end_or_idle(session))

    def _send_read(self, events):
        self.feed.cursor = events[-1][0]
        yield from self._hand_on(self.feed.page(events))

    def _hand_on(self, record):
        """A page, once the cursor it brings the client to is recorded."""
        self.feed.delivered()
        if record.events:  # (a first page after a cursor inside a line may keep none)
            yield record
        self.last_sent = self.monotonic()

    def _read_page(self):
        """(events, more, None) for a full page that goes on right after the cursor:
        nothing before it expired, and more is waiting, so replaying a long buffer costs
        one query a page. Otherwise (events, more, (the session or None, the first index
        the buffer retains))."""
        feed = self.feed
        with feed.new_uow() as uow:
            events, more = feed.read_page(uow, self.settings.page_size, self.settings.page_bytes)
            # Any page that starts right after the cursor needs no retention lookup either
            # (a live follower's usual read).
            contiguous = bool(events) and events[0][0] == feed.cursor + 1
            if contiguous and more:
                return events, more, None
            session = uow.sessions.get(feed.session_id)
            oldest = None if contiguous else uow.outputs.oldest_index(feed.session_id)
        if session is None:
            return events, more, (None, None)
        # Anything between the cursor and what is retained has expired.
        return events, more, (session, oldest if oldest is not None else session.next_event_index)

    def _end_or_idle(self, session):
        if not session.is_completed:
            return _IDLE
        last = self.feed.last_index(session)
        # Under READ COMMITTED (PostgreSQL) the session is read after the events, so
        # lines committed just before the completion can be missing from this read:
        # read once more before the end. Once only: a hole left by retention (rows
        # pruned out of order) must not keep the stream from ending.
        if self.feed.cursor < last and not self.reread_before_end:
            self.reread_before_end = True
            return _AGAIN
        yield self.feed.end(session)
        return _STOP

    def _still_authorised(self):
        """False once the caller's credentials, looked up again when a check is due, no
        longer work (a caller without a token has none to lose)."""
        if self.caller.token_id is None:
            return True
        if self.monotonic() - self.last_checked >= self.settings.auth_check_seconds:
            if not tokens.still_valid(self.caller, self.feed.new_uow()):
                return False
            self.last_checked = self.monotonic()
        return True

    def _until_due(self, now):
        """Seconds until the stream must act by itself: a heartbeat, a token check, its end."""
        settings = self.settings
        due = self.last_sent + settings.heartbeat_seconds
        if self.caller.token_id is not None:
            due = min(due, self.last_checked + settings.auth_check_seconds)
        due = min(due, self.started + settings.max_seconds)
        return max(0.0, due - now)


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
