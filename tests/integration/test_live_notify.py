"""PostgreSQL wakes live followers of every instance: a commit that grows a session's
buffer or ends it notifies channel turnlog_live with the session id (migration 0013),
and `live_notify.listen` hands each id on. SQLite has no such channel."""
import queue
import threading

import pytest

from app.extensions import db
from app.storage import live_notify

WAIT_SECONDS = 10


@pytest.fixture
def notified(app, backend):
    """A queue of the session ids notified while the test runs (PostgreSQL only)."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL only (set TURNLOG_TEST_POSTGRES_URL)")
    ids, listening, stopped = queue.Queue(), threading.Event(), threading.Event()
    engine = db.engine
    listener = threading.Thread(target=live_notify.listen, args=(engine, ids.put),
                                kwargs={"stop": stopped.is_set, "on_listening": listening.set})
    listener.start()
    assert listening.wait(WAIT_SECONDS)
    yield ids
    stopped.set()
    listener.join(WAIT_SECONDS)
    assert not listener.is_alive()


def drain(ids):
    found = []
    while True:
        try:
            found.append(ids.get(timeout=0.5))
        except queue.Empty:
            return found


def test_ingest_and_completion_notify_once_per_commit(notified, new_session, feed, complete):
    sid = new_session()
    other = new_session()
    assert drain(notified) == []  # opening a session moves no buffer
    feed(sid, ["one", "two", "three"])
    assert notified.get(timeout=WAIT_SECONDS) == sid
    feed(other, ["elsewhere"])
    complete(sid)
    assert drain(notified) == [other, sid]


def test_a_replay_that_stores_nothing_notifies_nobody(notified, new_session, feed):
    sid = new_session()
    feed(sid, ["one", "two"])
    assert drain(notified) == [sid]
    feed(sid, ["one", "two"], seq=0)  # the same seqs: deduplicated, the buffer unmoved
    assert drain(notified) == []


def test_sqlite_has_no_channel(app, backend):
    assert live_notify.supported(db.engine) is (backend == "postgresql")
