"""Two gunicorn instances on different ports serve one database (a PostgreSQL schema,
or a SQLite file on the same host).

Runners post one session's output through both; a stream client on instance A sees
what was ingested through B within the documented bound: a stream polls the database
every STREAM_POLL_SECONDS (0.25 s here), so an event reaches it at most one poll interval
plus one read after its ingest transaction commits. On PostgreSQL the commit's NOTIFY
wakes A at once, however long its poll interval.
"""
import threading
import time
from contextlib import contextmanager

import pytest

from tests import servers
from tests.servers import call
from tests.sse_client import EventStream

POLL_SECONDS = 0.25  # STREAM_POLL_SECONDS for this test (the default is 0.1)
FAN_OUT_SECONDS = 1.0  # the bound asserted: commit on B -> frame on a client of A
BATCHES, BATCH, PAUSE = 40, 5, 0.05
READ_SECONDS = 30


@pytest.fixture
def instances(database_url, tmp_path):
    """(A, B): two gunicorn servers, 2 workers each, on the test's database."""
    with two_instances(database_url, tmp_path, POLL_SECONDS) as pair:
        yield pair


@contextmanager
def two_instances(database_url, tmp_path, poll_seconds, heartbeat_seconds=0.5):
    # a short heartbeat lets a server notice a closed stream soon, so it stops quickly
    env = {"TURNLOG_STREAM_POLL_SECONDS": str(poll_seconds),
           "TURNLOG_STREAM_HEARTBEAT_SECONDS": str(heartbeat_seconds)}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with servers.gunicorn(tmp_path / "a", env=env, database_url=database_url) as a, \
            servers.gunicorn(tmp_path / "b", env=env, database_url=database_url) as b:
        yield a, b


def test_a_client_of_one_instance_sees_output_ingested_through_another(instances, rows):
    a, b = instances
    status, body = call(a.base, "POST", "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201, body
    sid = body["session"]["session_id"]
    stream = EventStream(a.base, f"/api/remote/sessions/{sid}/stream")
    deadline = time.monotonic() + READ_SECONDS
    assert stream.status == 200 and stream.next_frame(deadline).retry is not None
    committed = {}  # payload -> monotonic time its POST through B returned
    errors = []

    def produce(server, name, first_seq):
        try:
            for n in range(0, BATCHES * BATCH, BATCH):
                chunks = [{"seq": first_seq + n + i, "data": f"{name} {n + i}"}
                          for i in range(BATCH)]
                status, body = call(server.base, "POST", f"/api/remote/sessions/{sid}/output",
                                    {"chunks": chunks})
                assert status == 200 and body["accepted"] == BATCH, (status, body)
                if server is b:
                    committed.update({c["data"]: time.monotonic() for c in chunks})
                time.sleep(PAUSE)
        except Exception as err:  # reported by the main thread
            errors.append(err)

    # two runners of one session, one per instance, each with seqs of its own
    producers = [threading.Thread(target=produce, args=(server, name, first_seq))
                 for server, name, first_seq in ((a, "via-a", 0), (b, "via-b", 10**6))]
    arrived = {}  # payload -> monotonic time its frame reached the client of A
    received = []
    ends = []
    try:
        for producer in producers:
            producer.start()
        while len(received) < 2 * BATCHES * BATCH:
            frame = stream.next_frame(deadline)
            assert frame is not None, "the stream ended early"
            if frame.event == "output":
                received.append(frame.data["event_index"])
                arrived[frame.data["payload"]] = time.monotonic()
        for producer in producers:
            producer.join(READ_SECONDS)
        status, body = call(b.base, "POST", f"/api/remote/sessions/{sid}/complete",
                            {"exit_code": 0})
        assert status == 200, body
        ends = [f.data for f in stream.frames_until(deadline, lambda f: f.event == "end")
                if f.event == "end"]
    finally:
        for producer in producers:
            producer.join(READ_SECONDS)
        stream.close()
    assert errors == []
    total = 2 * BATCHES * BATCH
    assert ends == [{"status": "completed", "exit_code": 0, "last_event_index": total - 1}]

    assert received == list(range(total))  # gap-free across both instances
    lags = sorted(arrived[payload] - at for payload, at in committed.items())
    print(f"\nfan-out B -> client of A: median {lags[len(lags) // 2] * 1000:.0f} ms,"
          f" max {lags[-1] * 1000:.0f} ms over {len(lags)} events")
    assert lags[-1] < FAN_OUT_SECONDS
    stored = rows("SELECT COUNT(*), MIN(event_index), MAX(event_index) FROM"
                  " remote_runtime_outputs WHERE session_id = ?", sid)
    assert stored == [(total, 0, total - 1)]


def test_on_postgresql_a_commit_through_one_instance_wakes_the_other_at_once(
        database_url, backend, tmp_path):
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: SQLite has no notifications, its instances poll")
    # No poll comes during the test, and a follower looks for itself only at a
    # heartbeat (every 3 s): only a notification can wake A sooner.
    slow_poll, heartbeat = 30.0, 3.0
    with two_instances(database_url, tmp_path, slow_poll, heartbeat) as (a, b):
        status, body = call(a.base, "POST", "/api/remote/sessions", {"session_type": "agent"})
        assert status == 201, body
        sid = body["session"]["session_id"]
        stream = EventStream(a.base, f"/api/remote/sessions/{sid}/stream")
        deadline = time.monotonic() + READ_SECONDS
        try:
            assert stream.status == 200 and stream.next_frame(deadline).retry is not None
            time.sleep(1.0)  # the worker's first poll has run; it now sleeps slow_poll
            lags = []
            for n in range(10):
                sent = time.monotonic()
                status, body = call(b.base, "POST", f"/api/remote/sessions/{sid}/output",
                                    {"chunks": [{"seq": n, "data": f"via-b {n}"}]})
                assert status == 200 and body["accepted"] == 1, body
                frame = stream.next_frame(deadline)
                while frame is not None and frame.event != "output":
                    frame = stream.next_frame(deadline)
                assert frame is not None and frame.data["payload"] == f"via-b {n}"
                lags.append(time.monotonic() - sent)
        finally:
            stream.close()
    print(f"\nNOTIFY B -> client of A: max {max(lags) * 1000:.0f} ms over {len(lags)} events")
    assert max(lags) < FAN_OUT_SECONDS
