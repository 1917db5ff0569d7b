"""SQLite write-ahead-log checkpoints, taken off the request path.

In WAL mode every commit appends pages to the log, and by default the commit that
takes the log past 1,000 pages copies them all back into the database file and
syncs both: one request in a few dozen paid for everyone's pages, a tail-latency
spike for whoever drew it (docs/performance.md, Storage). Here one OS thread per
database file checkpoints instead, a short while after writes: PASSIVE, so it never
waits for or blocks a reader or a writer.

Request connections keep an automatic checkpoint as a backstop (BACKSTOP_PAGES),
so the log stays bounded even if this thread falls behind or is not running. The
thread starts on the first write and ends after IDLE_ROUNDS rounds without one,
so an idle process (or a test's short-lived app) holds no thread.

It is a real OS thread under gunicorn's gevent worker as well (the originals of
`_thread` and `time`, not gevent's patched ones): SQLite releases the GIL while it
copies and syncs, so the worker's greenlets go on meanwhile.
"""
import logging
import sqlite3
from pathlib import Path

from gevent import monkey

log = logging.getLogger(__name__)

# The automatic checkpoint request connections keep, in pages (4 KiB each by
# default): far above what one interval's writes bring, so in practice it never fires.
BACKSTOP_PAGES = 16_000
IDLE_ROUNDS = 4

_start_thread = monkey.get_original("_thread", "start_new_thread")
_new_lock = monkey.get_original("_thread", "allocate_lock")
_sleep = monkey.get_original("time", "sleep")


class WalCheckpointer:
    """Checkpoints the database at `path` every `interval` seconds while writes come.

    `wrote()` is called after each write commit; it is cheap (a flag under a lock)
    and starts the thread when none runs.
    """

    def __init__(self, path, interval):
        self.path = path
        self.interval = interval
        self.checkpoints = 0  # taken so far, for tests and logs
        self._lock = _new_lock()
        self._dirty = False
        self._running = False

    @property
    def running(self):
        with self._lock:
            return self._running

    def wrote(self):
        """Note a committed write; start the checkpoint thread when none runs."""
        with self._lock:
            self._dirty = True
            if self._running:
                return
            self._running = True
        _start_thread(self._run, ())

    def _run(self):
        try:
            # mode=rw: never create a database that went away (a test's removed folder).
            conn = sqlite3.connect(f"{Path(self.path).resolve().as_uri()}?mode=rw", uri=True,
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            log.warning("WAL checkpoints of %s stop: %s", self.path, err)
            self._stop()
            return
        try:
            self._loop(conn)
        except BaseException:
            self._stop()  # so that the next write starts a thread again
            raise
        finally:
            conn.close()

    def _loop(self, conn):
        idle = 0
        while True:
            _sleep(self.interval)
            with self._lock:
                dirty, self._dirty = self._dirty, False
                idle = 0 if dirty else idle + 1
                if idle >= IDLE_ROUNDS:
                    self._running = False
                    return
            if dirty:
                self._checkpoint(conn)

    def _checkpoint(self, conn):
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
        except sqlite3.Error as err:  # a busy or vanished file: the backstop still holds
            log.debug("WAL checkpoint of %s skipped: %s", self.path, err)

    def _stop(self):
        with self._lock:
            self._running = False


def database_file(engine):
    """The file path of a SQLite engine's database, or None (in memory, or not SQLite)."""
    if engine.dialect.name != "sqlite":
        return None
    path = engine.url.database
    if not path or path == ":memory:" or "mode=memory" in str(engine.url):
        return None
    return path
