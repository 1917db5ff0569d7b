"""SQLite's write lock, waited for in Python rather than inside SQLite.

SQLite's own busy handler sleeps inside a C call. Under gunicorn's gevent worker
that freezes every request of the process for as long as a writer queues, so each
connection waits in C only `C_BUSY_MS`, and `begin_immediate` retries with Python
sleeps (cooperative once gevent has patched `time`) until the configured timeout.
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
