"""One read per process per watched session, shared by all its followers.

A follower of a session's buffer (a live stream, or any other feed read from the
buffer) waits here instead of polling the database itself. One poller per process
reads where every watched session stands, all in one query (its next event index
and status: a `Mark`); for each session that moved it then reads the new rows once
(both feeds' columns) into a `LivePage`, and wakes that session's followers. A
follower whose cursor is where a kept page starts takes the page instead of
querying (`shared`); one that is behind, or finds no page for its cursor (the
page read failed, retention left a hole, it just joined), reads for itself as
before. A `kick()` (a NOTIFY from another instance) makes the poller read at once;
`listen`, where the database can notify, runs beside the poller and kicks it.
Both exist only while someone is watching.

Only `threading` primitives are used: under gunicorn's gevent worker they are
patched into greenlet ones, so a waiting follower costs no thread there either.
"""
import logging
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)
# Pages kept per session: a follower a few wake-ups behind still takes them from
# here. Each holds at most one read's rows (the stream page size).
KEPT_PAGES = 8
# A kick reads at once, unless the last read began less than this long ago: then it
# waits out the rest, so a stream of notifications (one per ingest commit, from
# every instance) costs at most 20 reads a second, however many commits.
KICK_INTERVAL_SECONDS = 0.05


@dataclass(frozen=True)
class Mark:
    """Where a session stands: None for a session that no longer exists."""

    next_event_index: int
    completed: bool


class LivePage:
    """Buffer rows `first`..`last` (consecutive) as (event_index, event JSON, stored
    live events or None), read once for every follower of the session. Not a value:
    it keeps each feed's view of its rows once made (`feed`), so every follower of a
    feed gets the same record."""

    def __init__(self, first, last, rows):
        self.first = first
        self.last = last
        self.rows = rows
        self._feeds = {}  # project -> project(rows)

    def feed(self, project):
        """`project(rows)`, one feed's view of the page, made once and then shared."""
        made = self._feeds.get(project)
        if made is None:
            made = self._feeds.setdefault(project, project(self.rows))
        return made

    def after(self, cursor):
        """The rows after `cursor` (inside this page) as a page of their own."""
        return LivePage(cursor + 1, self.last, self.rows[cursor + 1 - self.first:])


def rows_reader(new_uow, max_bytes=0):
    """`read_rows` for LiveHub: {session_id: rows after `after`} in one unit of work,
    each session's no more than fit in `max_bytes` (its first row always comes)."""
    def read_rows(after_by_session, limit):
        with new_uow() as uow:
            return {sid: uow.outputs.list_feeds_after(sid, after, limit, max_bytes)
                    for sid, after in after_by_session.items()}

    return read_rows


def marks_reader(new_uow):
    """`read_marks` for LiveHub over units of work from `new_uow()`."""
    def read_marks(session_ids):
        with new_uow() as uow:
            rows = uow.sessions.marks(session_ids)
        return {sid: Mark(index, status != "running") for sid, (index, status) in rows.items()}

    return read_marks


def _start_daemon(target):
    threading.Thread(target=target, name="turnlog-live-hub", daemon=True).start()


class LiveHub:
    """`read_marks(session_ids)` returns {session_id: Mark} for the sessions that exist;
    `read_rows({session_id: after}, limit)` (optional) up to `limit` rows after `after`
    of each, as `LivePage.rows` holds them. `listen(on_notify, stop)` (optional)
    calls `on_notify(session_id)` for each session another writer moved, until
    `stop()` is true."""

    def __init__(self, read_marks, poll_seconds, *, read_rows=None, page_size=5000,
                 listen=None, start=_start_daemon, monotonic=time.monotonic):
        self._read_marks = read_marks
        self._read_rows = read_rows
        self._page_size = page_size
        self._listen = listen
        self._poll_seconds = poll_seconds
        self._start = start
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._kicked = threading.Event()
        self._watched = {}  # session_id -> [followers, Condition on self._lock]
        self._marks = {}  # session_id -> the last Mark read (None: session gone)
        self._read_to = {}  # session_id -> the last index the kept pages reach
        self._pages = {}  # session_id -> {first index: LivePage}, the latest KEPT_PAGES
        self._polling = False
        self._generation = 0  # of the poller; a listener stops once it changes
        self.polls = 0  # reads of the marks, for tests and figures
        self.page_reads = 0  # sessions' rows read for their followers

    def watch(self, session_id):
        """A `Watch` of `session_id`; registered on its first wait, released by close()."""
        return Watch(self, session_id)

    def followers(self, session_id=None):
        """How many followers wait on `session_id` (or on any session)."""
        with self._lock:
            if session_id is not None:
                return self._watched.get(session_id, [0])[0]
            return sum(entry[0] for entry in self._watched.values())

    def kick(self, session_id=None):
        """Read the marks now rather than at the next poll: for any reason, or because
        `session_id` moved (ignored unless someone here follows it)."""
        if session_id is None or session_id in self._watched:
            self._kicked.set()

    def poll_once(self):
        """Read the marks of every watched session once; read the new rows of those
        that moved, once for all their followers; wake their followers."""
        with self._lock:
            session_ids = list(self._watched)
        if not session_ids:
            return
        marks = self._read_marks(session_ids)
        self.polls += 1
        with self._lock:
            wanted = self._rows_wanted(session_ids, marks)
        pages = self._read_pages(wanted)
        with self._lock:
            for session_id, page in pages.items():
                self._keep(session_id, wanted[session_id], page, marks[session_id])
            for session_id in session_ids:
                entry = self._watched.get(session_id)
                mark = marks.get(session_id)
                if entry is not None and self._marks.get(session_id, "unread") != mark:
                    self._marks[session_id] = mark
                    entry[1].notify_all()

    def shared(self, session_id, cursor):
        """The kept page that goes on from `cursor` (its rows after `cursor`), or None."""
        with self._lock:
            pages = self._pages.get(session_id)
            if not pages:
                return None
            page = pages.get(cursor + 1)
            if page is not None:
                return page
            for page in pages.values():
                if page.first <= cursor < page.last:
                    return page.after(cursor)
            return None

    def _rows_wanted(self, session_ids, marks):
        """{session_id: the index its new rows follow} for watched sessions that moved
        past what was read. A session seen for the first time is read from its mark on:
        its followers read what came before for themselves."""
        wanted = {}
        for session_id in session_ids:
            mark = marks.get(session_id)
            if session_id not in self._watched or mark is None:
                self._forget_pages(session_id)
                continue
            newest = mark.next_event_index - 1
            read_to = self._read_to.get(session_id)
            if read_to is None or read_to > newest:
                self._forget_pages(session_id)
                self._read_to[session_id] = newest
            elif read_to < newest and self._read_rows is not None:
                wanted[session_id] = read_to
        return wanted

    def _read_pages(self, wanted):
        if not wanted:
            return {}
        try:
            found = self._read_rows(wanted, self._page_size)
        except Exception:  # followers then read for themselves
            log.exception("live hub: reading the new rows failed")
            found = {}
        self.page_reads += len(wanted)
        return {session_id: found.get(session_id, []) for session_id in wanted}

    def _keep(self, session_id, after, rows, mark):
        if session_id not in self._watched or self._read_to.get(session_id) != after:
            return  # left, or forgotten, while the rows were read
        consecutive = rows and rows[0][0] == after + 1 and rows[-1][0] - rows[0][0] == len(rows) - 1
        if not consecutive:
            # A hole (retention pruned rows) or a failed read: its followers read
            # for themselves, with the Reset that a hole may call for.
            self._forget_pages(session_id)
            self._read_to[session_id] = mark.next_event_index - 1
            return
        pages = self._pages.setdefault(session_id, {})
        pages[after + 1] = LivePage(after + 1, rows[-1][0], rows)
        while len(pages) > KEPT_PAGES:
            del pages[next(iter(pages))]
        self._read_to[session_id] = rows[-1][0]

    def _forget_pages(self, session_id):
        self._pages.pop(session_id, None)
        self._read_to.pop(session_id, None)

    def run_poller(self):
        """The poller: poll, pause, repeat; returns once nobody watches anything."""
        while True:
            with self._lock:
                if not self._watched:
                    self._polling = False
                    self._generation += 1
                    return
            self._kicked.clear()
            began = self._monotonic()
            try:
                self.poll_once()
            except Exception:  # the database may be down a while: followers time out meanwhile
                log.exception("live hub: reading the session marks failed")
            if self._kicked.wait(self._poll_seconds):
                time.sleep(max(0.0, began + KICK_INTERVAL_SECONDS - self._monotonic()))

    def _join(self, session_id):
        with self._lock:
            entry = self._watched.setdefault(session_id, [0, threading.Condition(self._lock)])
            entry[0] += 1
            start_poller = not self._polling
            self._polling = True
            generation = self._generation
        if start_poller:
            self._start(self.run_poller)
            if self._listen is not None:
                self._start(lambda: self._listen(self.kick, lambda: self._generation != generation))

    def _leave(self, session_id):
        with self._lock:
            entry = self._watched[session_id]
            entry[0] -= 1
            if entry[0] == 0:
                del self._watched[session_id]
                self._marks.pop(session_id, None)
                self._forget_pages(session_id)

    def _wait(self, session_id, cursor, timeout):
        deadline = self._monotonic() + timeout
        with self._lock:
            condition = self._watched[session_id][1]
            while not self._moved_past(session_id, cursor):
                left = deadline - self._monotonic()
                if left <= 0:
                    return False
                condition.wait(left)
            return True

    def _moved_past(self, session_id, cursor):
        if session_id not in self._marks:
            return False  # not read yet: the first poll will tell
        mark = self._marks[session_id]
        return mark is None or mark.completed or mark.next_event_index - 1 > cursor


class Watch:
    """One follower's view of the hub: `wait` and `shared` are a `streaming.Feed`'s seams."""

    def __init__(self, hub, session_id):
        self._hub = hub
        self._session_id = session_id
        self._joined = False

    def wait(self, session_id, cursor, timeout):
        """Block until the session has events after `cursor`, ends or is gone (True),
        or `timeout` seconds pass (False)."""
        assert session_id == self._session_id, "a watch follows one session"
        if not self._joined:
            self._hub._join(session_id)
            self._joined = True
        return self._hub._wait(session_id, cursor, timeout)

    def shared(self, session_id, cursor):
        """A `streaming.Feed`'s `shared` seam: the hub's page after `cursor`, or None."""
        return self._hub.shared(session_id, cursor)

    def close(self):
        """Stop following; the last follower of a session stops its polling."""
        if self._joined:
            self._joined = False
            self._hub._leave(self._session_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
