"""A gunicorn worker killed (SIGKILL) in the middle of a turn (docs/reliability.md, Crash).

The runner re-sends, with the same seqs, every batch that got no 2xx; the server stores
each chunk once whatever the kill interrupted, and the turn is written once, whole.
"""
import http.client
import os
import signal
import sqlite3
import threading
import time
from contextlib import closing
from contextlib import contextmanager

from sqlalchemy import create_engine
from sqlalchemy import make_url
from sqlalchemy.pool import NullPool

from tests import claude_lines as cl
from tests import servers
from tests.figures import record
from tests.servers import call

TURN_BATCH = 20  # assistant lines per POST while the turn is open
BIG_BATCH = 2000  # lines of the request the second kill lands in
CUT_AFTER_SECONDS = 0.15  # how long into that request the second kill comes
RESTART_SECONDS = 30


def worker_of(server, old=None):
    """The one live worker's pid, once it is not `old` (the master restarts killed ones)."""
    deadline = time.monotonic() + RESTART_SECONDS
    while True:
        pids = servers.worker_pids(server.master_pid)
        if len(pids) == 1 and pids[0] != old:
            return pids[0]
        assert time.monotonic() < deadline, f"no new worker after {old}: {pids}"
        time.sleep(0.05)


def post_once(base, sid, chunks, token):
    """(status, body) of one POST, or (None, error) when no response came back."""
    try:
        return call(base, "POST", f"/api/remote/sessions/{sid}/output", {"chunks": chunks},
                    timeout=RESTART_SECONDS, token=token)
    except (OSError, http.client.HTTPException) as err:
        return None, err


def post_until_acknowledged(base, sid, chunks, token):
    """What a runner does: send the same chunks (same seqs) until a 2xx; the body."""
    deadline = time.monotonic() + RESTART_SECONDS
    while True:
        status, body = post_once(base, sid, chunks, token)
        if status == 200:
            assert body["accepted"] + body["duplicates"] == len(chunks), body
            return body
        assert status in (None, 503) and time.monotonic() < deadline, (status, body)
        time.sleep(0.2)


@contextmanager
def session_row_locked(backend, database_url, sid):
    """Hold the lock an ingest request must take first (SQLite: the write lock; PostgreSQL:
    the session row), so a request sent meanwhile is surely inside the worker."""
    if backend == "sqlite":
        with closing(sqlite3.connect(make_url(database_url).database,
                                     isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:
                conn.execute("ROLLBACK")
        return
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT 1 FROM agent_sessions WHERE session_id = %s FOR UPDATE",
                                 (sid,))
            yield
    finally:
        engine.dispose()


def test_a_worker_killed_mid_turn_loses_no_acknowledged_chunk(backend, database_url, tmp_path,
                                                               rows):
    texts = [f"crash turn part {i}" for i in range(3 * TURN_BATCH + BIG_BATCH + TURN_BATCH)]
    chunks = [{"seq": i, "data": cl.assistant(cl.text(t), uuid=f"a-{i}")}
              for i, t in enumerate(texts)]
    chunks.append({"seq": len(texts), "data": cl.result(uuid="r-end")})
    batches = [chunks[:TURN_BATCH], chunks[TURN_BATCH:2 * TURN_BATCH],  # acknowledged
               chunks[2 * TURN_BATCH:3 * TURN_BATCH],  # sent while the worker is killed
               chunks[3 * TURN_BATCH:3 * TURN_BATCH + BIG_BATCH],  # killed into, maybe
               chunks[3 * TURN_BATCH + BIG_BATCH:]]  # the rest of the turn, and its result
    with servers.gunicorn(tmp_path, workers=1, threads=4, database_url=database_url,
                          auth=True) as server:
        runner = server.new_token("create-runner-token", "--machine", "m1", "--any-user")
        status, body = call(server.base, "POST", "/api/remote/sessions",
                            {"session_type": "agent", "user_id": "alice"}, token=runner)
        assert status == 201, body
        sid = body["session"]["session_id"]
        acknowledged = []  # seqs of chunks whose request got a 2xx
        for batch in batches[:2]:
            status, body = post_once(server.base, sid, batch, runner)
            assert status == 200 and body["accepted"] == len(batch), (status, body)
            acknowledged += [c["seq"] for c in batch]

        # Kill 1: the request is waiting for the lock inside the worker.
        first = worker_of(server)
        with session_row_locked(backend, database_url, sid):
            cut = []
            sender = threading.Thread(target=lambda: cut.append(
                post_once(server.base, sid, batches[2], runner)))
            sender.start()
            time.sleep(0.5)  # ample for loopback: the request is waiting in the worker
            os.kill(first, signal.SIGKILL)
        sender.join(timeout=RESTART_SECONDS)  # after the release: never waits on our lock
        assert not sender.is_alive()
        assert cut[0][0] is None, f"the killed request was answered: {cut[0]}"
        second = worker_of(server, old=first)
        resent = post_until_acknowledged(server.base, sid, batches[2], runner)
        acknowledged += [c["seq"] for c in batches[2]]

        # Kill 2: into a large request, wherever it is by then (parsing, writing, replying).
        cut = []
        sender = threading.Thread(target=lambda: cut.append(
            post_once(server.base, sid, batches[3], runner)))
        sender.start()
        time.sleep(CUT_AFTER_SECONDS)
        os.kill(second, signal.SIGKILL)
        sender.join(timeout=RESTART_SECONDS)
        assert not sender.is_alive()
        worker_of(server, old=second)
        second_cut = cut[0][0] is None
        resent_duplicates = 0
        if second_cut:  # no answer: the runner cannot know, so it sends them again
            body = post_until_acknowledged(server.base, sid, batches[3], runner)
            resent_duplicates = body["duplicates"]  # > 0 when it died after its commit
        else:
            assert cut[0][0] == 200, cut[0]
        acknowledged += [c["seq"] for c in batches[3]]

        body = post_until_acknowledged(server.base, sid, batches[4], runner)
        assert body["accepted"] == len(batches[4])
        acknowledged += [c["seq"] for c in batches[4]]
        reader = server.new_token("create-user-token", "--user", "alice")
        status, body = call(server.base, "GET", f"/api/remote/sessions/{sid}", token=reader)
        assert status == 200, body
        session = body["session"]

    assert resent["accepted"] == len(batches[2])  # the first cut request wrote nothing
    stored = rows("SELECT event_index, producer_seq FROM remote_runtime_outputs "
                  "WHERE session_id = ? ORDER BY event_index", sid)
    assert [r[0] for r in stored] == list(range(len(chunks)))
    assert [r[1] for r in stored] == acknowledged == list(range(len(chunks)))
    messages = rows("SELECT content FROM session_messages WHERE session_id = ?", sid)
    assert messages == [("\n\n".join(texts),)]
    assert session["message_count"] == 1 and session["conversation_turn_count"] == 1
    record(f"crash [{backend}]", kills=2, requests_cut=1 + second_cut, chunks_acknowledged=len(acknowledged),
           resent_duplicates=resent_duplicates, lost=len(chunks) - len(stored),
           duplicated=len(stored) - len({r[1] for r in stored}))
