"""Readers wait out a short lock instead of failing (issue 29). In WAL mode readers
never wait for a writer; what keeps them out is an exclusive lock on the database
file (the last connection closing checkpoints the log under one, the first opening
after it recovers the log under one). A holder takes that lock here, with SQLite's
exclusive locking mode, while the app's pool holds no connection, as after a start."""
import sqlite3
import threading
import time

import pytest

from app.extensions import db
from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines

pytestmark = pytest.mark.sqlite_only
READ_TIMEOUT = 1.0


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "SQLITE_CHECKPOINT_SECONDS": 0,
            "SQLITE_READ_BUSY_TIMEOUT": READ_TIMEOUT}


@pytest.fixture
def sid(app, client):
    sid = create_session(client)
    assert post_lines(client, sid, [cl.assistant(cl.text("hello")), cl.result()]).status_code == 200
    assert complete(client, sid).status_code == 200
    return sid


def start_holder(app, db_path, seconds, release=None):
    """A thread holding the file's lock for `seconds` (or until `release` is set), once
    the app's pool is empty (as after a start: every reader opens its connection anew);
    returns it once it holds the lock."""
    with app.app_context():
        db.engine.dispose()
    taken = threading.Event()
    holder = threading.Thread(target=hold_exclusive_lock,
                              args=(db_path, seconds, taken, release or threading.Event()))
    holder.start()
    assert taken.wait(5)
    return holder


def hold_exclusive_lock(db_path, seconds, taken, release):
    """Hold an exclusive lock on the database file (set `taken` once held)."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("SELECT COUNT(*) FROM agent_sessions").fetchall()
    taken.set()
    release.wait(seconds)
    conn.execute("ROLLBACK")
    conn.close()


def reads_while_locked(app, db_path, sid, hold_seconds):
    """The status of each read made while another connection holds the file's lock:
    for `hold_seconds`, or, with None, until every read has its answer."""
    release = threading.Event() if hold_seconds is None else None
    holder = start_holder(app, db_path, hold_seconds or 60, release)
    paths = [f"/api/remote/sessions/{sid}", f"/api/remote/sessions/{sid}/messages",
             f"/api/remote/sessions/{sid}/stream", f"/sessions/{sid}"]
    statuses = {}

    def read(path):
        response = app.test_client().get(path)
        response.get_data()  # the stream's page, to its end
        error = response.get_json()["error"]["code"] if response.status_code >= 400 else None
        statuses[path] = (response.status_code, response.headers.get("Retry-After"), error)

    readers = [threading.Thread(target=read, args=(path,)) for path in paths]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    if release is not None:
        release.set()
    holder.join()
    return statuses


def test_the_lock_stops_a_reader_that_does_not_wait(app, db_path, sid):
    holder = start_holder(app, db_path, 0.2)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 1")
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        conn.execute("SELECT COUNT(*) FROM agent_sessions").fetchall()
    conn.close()
    holder.join()


def test_readers_wait_out_a_lock_held_200_ms(app, db_path, sid):
    statuses = reads_while_locked(app, db_path, sid, 0.2)
    assert {status for status, _, _ in statuses.values()} == {200}, statuses


def test_a_lock_held_longer_than_the_setting_is_503_database_busy(app, db_path, sid):
    started = time.monotonic()
    statuses = reads_while_locked(app, db_path, sid, None)
    assert time.monotonic() - started >= READ_TIMEOUT  # each waited before giving up
    assert set(statuses.values()) == {(503, "1", "database_busy")}, statuses
