"""One wake-up per process per watched session, shared by all its followers.

A follower of a session's buffer (a live stream, or any other feed read from the
buffer) waits here instead of polling the database itself. One poller per process
reads where every watched session stands, all in one query (its next event index
and status: a `Mark`), and wakes the followers of each session that moved; they
then read the new rows themselves. A `kick()` (a NOTIFY from another instance)
makes the poller read at once. The poller exists only while someone is watching.

Only `threading` primitives are used: under gunicorn's gevent worker they are
patched into greenlet ones, so a waiting follower costs no thread there either.
"""
import logging
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Mark:
    """Where a session stands: None for a session that no longer exists."""

    next_event_index: int
    completed: bool


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
    """`read_marks(session_ids)` returns {session_id: Mark} for the sessions that exist."""

    def __init__(self, read_marks, poll_seconds, *, start=_start_daemon, monotonic=time.monotonic):
        self._read_marks = read_marks
        self._poll_seconds = poll_seconds
        self._start = start
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._kicked = threading.Event()
        self._watched = {}  # session_id -> [followers, Condition on self._lock]
        self._marks = {}  # session_id -> the last Mark read (None: session gone)
        self._polling = False
        self.polls = 0  # reads of the marks, for tests and figures

    def watch(self, session_id):
        """A `Watch` of `session_id`; registered on its first wait, released by close()."""
        return Watch(self, session_id)

    def followers(self, session_id=None):
        """How many followers wait on `session_id` (or on any session)."""
        with self._lock:
            if session_id is not None:
                return self._watched.get(session_id, [0])[0]
            return sum(entry[0] for entry in self._watched.values())

    def kick(self):
        """Read the marks now rather than at the next poll."""
        self._kicked.set()

    def poll_once(self):
        """Read the marks of every watched session once; wake those that moved."""
        with self._lock:
            session_ids = list(self._watched)
        if not session_ids:
            return
        marks = self._read_marks(session_ids)
        self.polls += 1
        with self._lock:
            for session_id in session_ids:
                entry = self._watched.get(session_id)
                mark = marks.get(session_id)
                if entry is not None and self._marks.get(session_id, "unread") != mark:
                    self._marks[session_id] = mark
                    entry[1].notify_all()

    def run_poller(self):
        """The poller: poll, pause, repeat; returns once nobody watches anything."""
        while True:
            with self._lock:
                if not self._watched:
                    self._polling = False
                    return
            self._kicked.clear()
            try:
                self.poll_once()
            except Exception:  # the database may be down a while: followers time out meanwhile
                log.exception("live hub: reading the session marks failed")
            self._kicked.wait(self._poll_seconds)

    def _join(self, session_id):
        with self._lock:
            entry = self._watched.setdefault(session_id, [0, threading.Condition(self._lock)])
            entry[0] += 1
            start_poller = not self._polling
            self._polling = True
        if start_poller:
            self._start(self.run_poller)

    def _leave(self, session_id):
        with self._lock:
            entry = self._watched[session_id]
            entry[0] -= 1
            if entry[0] == 0:
                del self._watched[session_id]
                self._marks.pop(session_id, None)

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
    """One follower's view of the hub: `wait` is `streaming.follow`'s `wait` seam."""

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

    def close(self):
        """Stop following; the last follower of a session stops its polling."""
        if self._joined:
            self._joined = False
            self._hub._leave(self._session_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
