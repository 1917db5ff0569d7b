"""SQLite: a writer waits for the write lock for SQLITE_BUSY_TIMEOUT seconds
(docs/reliability.md, Storage).
"""
import sqlite3
import threading
import time
from contextlib import closing

import pytest
from sqlalchemy import make_url

from tests import servers
from tests.figures import record
from tests.servers import call

HOLD_SECONDS = 1.0  # how long another connection keeps the write lock
SHORT_BUSY_TIMEOUT = 0.2  # TURNLOG_SQLITE_BUSY_TIMEOUT below the hold: the request gives up


def hold_write_lock(db_file, taken, errors):
    """Thread: take SQLite's write lock on a connection of its own, keep it HOLD_SECONDS."""
    try:
        with closing(sqlite3.connect(db_file, isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            taken.set()
            time.sleep(HOLD_SECONDS)
            conn.execute("ROLLBACK")
    except Exception as err:  # reported by the test
        errors.append(err)
        taken.set()


def post_while_locked(server, db_file):
    """One output POST sent while another connection holds the write lock:
    (sid, chunks, status, body, seconds the POST took, seconds the lock was still held)."""
    status, body = call(server.base, "POST", "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201, body
    sid = body["session"]["session_id"]
    chunks = [{"seq": i, "data": f"line {i}"} for i in range(10)]
    taken, errors = threading.Event(), []
    holder = threading.Thread(target=hold_write_lock, args=(db_file, taken, errors))
    holder.start()
    try:
        assert taken.wait(timeout=10)
        locked_at = time.monotonic()
        status, body = call(server.base, "POST", f"/api/remote/sessions/{sid}/output",
                            {"chunks": chunks})
        elapsed = time.monotonic() - locked_at
    finally:
        holder.join(timeout=10)
    assert errors == [] and not holder.is_alive()
    return sid, chunks, status, body, elapsed


@pytest.mark.sqlite_only
def test_an_ingest_request_waits_for_the_write_lock_then_succeeds(database_url, tmp_path, rows):
    with servers.gunicorn(tmp_path, workers=1, threads=4, database_url=database_url) as server:
        sid, chunks, status, body, waited = post_while_locked(
            server, make_url(database_url).database)
    assert status == 200 and body["accepted"] == len(chunks), body
    assert waited >= HOLD_SECONDS * 0.9  # it waited for the lock...
    assert waited < HOLD_SECONDS + 5  # ...and went on once it was free
    stored = rows("SELECT payload FROM remote_runtime_outputs WHERE session_id = ? "
                  "ORDER BY event_index", sid)
    assert [r[0] for r in stored] == [c["data"] for c in chunks]
    record("storage", lock_held_s=HOLD_SECONDS, waited_s=round(waited, 2),
           failed=int(status != 200))


@pytest.mark.sqlite_only
def test_a_busy_timeout_shorter_than_the_lock_is_a_503_the_runner_can_retry(database_url,
                                                                           tmp_path, rows):
    env = {"TURNLOG_SQLITE_BUSY_TIMEOUT": str(SHORT_BUSY_TIMEOUT)}
    with servers.gunicorn(tmp_path, workers=1, threads=4, database_url=database_url,
                          env=env) as server:
        sid, chunks, status, body, waited = post_while_locked(
            server, make_url(database_url).database)
        assert status == 503 and body["error"]["code"] == "database_busy", body
        assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?",
                    sid) == [(0,)]
        status, retried = call(server.base, "POST", f"/api/remote/sessions/{sid}/output",
                               {"chunks": chunks})
    assert SHORT_BUSY_TIMEOUT * 0.9 <= waited < HOLD_SECONDS  # gave up at the set timeout
    assert status == 200 and retried["accepted"] == len(chunks), retried
    record("storage", short_timeout_s=SHORT_BUSY_TIMEOUT, gave_up_after_s=round(waited, 2),
           retried_ok=int(status == 200))
