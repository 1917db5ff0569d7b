"""SQLite's locks, waited for in Python rather than inside SQLite.

SQLite's own busy handler sleeps inside a C call. Under gunicorn's gevent worker
that freezes every request of the process for as long as a writer queues, so each
connection waits in C only `C_BUSY_MS`, and `begin_immediate` (writers) and
`retry_busy` (readers, and a new connection's first look at the file) retry with
Python sleeps (cooperative once gevent has patched `time`) until their timeout.

What makes a reader busy in WAL mode is not a writer (readers never wait for one)
but an exclusive lock on the database file: the last connection to close
checkpoints the whole log and deletes it under one (a process that just filled the
database, exiting), and the first to open after that rebuilds the log's index under
one. A big log holds that lock longer than a C busy timeout short enough for gevent,
so readers opening meanwhile got "database is locked" (docs/performance.md, Storage).
"""
import sqlite3
import time

# What SQLite itself may wait (in C) on a busy database: enough for a reader that
# meets a checkpoint, short enough never to stall the other requests of a worker.
C_BUSY_MS = 1
FIRST_PAUSE = 0.001
LONGEST_PAUSE = 0.05


def begin_immediate(dbapi_connection, timeout, last_try, *, sleep=time.sleep,
                    monotonic=time.monotonic):
    """Take the write lock on a pysqlite connection, retrying for `timeout` seconds.

    `last_try()` runs BEGIN IMMEDIATE once more after the deadline, through the
    caller's own driver wrapper, so a lock that stayed taken fails the usual way.
    """
    deadline = monotonic() + timeout
    pause = FIRST_PAUSE
    while monotonic() < deadline:
        try:
            dbapi_connection.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as err:
            if err.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                raise
        sleep(max(0.0, min(pause, deadline - monotonic())))
        pause = min(pause * 2, LONGEST_PAUSE)
    last_try()


def is_busy(err):
    """True for SQLite's SQLITE_BUSY (or one of its extended codes): a lock was taken."""
    return (getattr(err, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY


def retry_busy(attempt, timeout, *, sleep=time.sleep, monotonic=time.monotonic):
    """attempt()'s result, trying again while it meets SQLITE_BUSY, for `timeout`
    seconds; the try after the deadline raises what it meets."""
    deadline = monotonic() + timeout
    pause = FIRST_PAUSE
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as err:
            if not is_busy(err) or monotonic() >= deadline:
                raise
        sleep(max(0.0, min(pause, deadline - monotonic())))
        pause = min(pause * 2, LONGEST_PAUSE)
