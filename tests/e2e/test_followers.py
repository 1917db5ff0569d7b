"""Live followers through a real gunicorn, as the README starts it (gunicorn.conf.py,
gevent workers): open streams cost no thread, every follower gets every event once,
a token's streams are limited, and a closed stream is released within a heartbeat."""
import json
import sqlite3
import time
import urllib.error
import urllib.request
from contextlib import closing
from urllib.parse import urlsplit

import pytest

from tests import servers
from tests.servers import call
from tests.sse_client import EventStream
from tests.sse_swarm import Swarm

IDLE_STREAMS = 64
ANSWER_SECONDS = 1.0  # the bound for ingest and reads with the streams open
FOLLOWERS = 1000
POSTS, LINES = 10, 5
HEARTBEAT = 0.5  # seconds: short, so that releases are quick to observe
# Slack over one heartbeat for a release to be seen: the lease row is deleted
# after the heartbeat notices the closed socket, and the host is shared.
RELEASE_SLACK = 1.5
WAIT = 60


def open_session(base, token=None, user_id=None):
    body = {"session_type": "agent"} if user_id is None else {"session_type": "agent",
                                                             "user_id": user_id}
    status, reply = call(base, "POST", "/api/remote/sessions", body, token=token)
    assert status == 201, reply
    return reply["session"]["session_id"]


def post(base, sid, first, count, token=None):
    chunks = [{"seq": first + i, "data": f"line {first + i}"} for i in range(count)]
    return call(base, "POST", f"/api/remote/sessions/{sid}/output", {"chunks": chunks},
                token=token)


def host_port(base):
    url = urlsplit(base)
    return url.hostname, url.port


@pytest.fixture
def server(tmp_path):
    with servers.gunicorn(tmp_path) as app:
        yield app


@pytest.fixture(params=["gunicorn", "nginx"])
def front(request, tmp_path):
    """The server as a client meets it: gunicorn itself, or the documented nginx site
    in front of it."""
    (tmp_path / "gunicorn").mkdir()
    with servers.gunicorn(tmp_path / "gunicorn") as app:
        if request.param == "gunicorn":
            yield app
            return
        with servers.nginx(tmp_path / "nginx", urlsplit(app.base).netloc) as proxy:
            yield proxy


def test_ingest_and_reads_answer_within_a_second_with_64_idle_streams_open(front):
    server = front
    sid = open_session(server.base)
    swarm = Swarm(*host_port(server.base), [f"/api/remote/sessions/{sid}/stream"] * IDLE_STREAMS)
    try:
        assert swarm.run(time.monotonic() + WAIT,
                         lambda s: all(f.status is not None for f in s.followers))
        assert {f.status for f in swarm.followers} == {200}
        timings = []
        for n in range(3):
            started = time.monotonic()
            status, body = post(server.base, sid, n, 1)
            timings.append(time.monotonic() - started)
            assert status == 200 and body["accepted"] == 1, body
            started = time.monotonic()
            status, body = call(server.base, "GET", f"/api/remote/sessions/{sid}")
            timings.append(time.monotonic() - started)
            assert status == 200, body
        if isinstance(server, servers.Nginx):
            # the site counts streams apart from requests: one more stream is refused
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{server.base}/api/remote/sessions/{sid}/stream",
                                       timeout=WAIT)
            refused.value.close()
            assert refused.value.code == 429
        # and every idle stream was woken for the new lines
        assert swarm.run(time.monotonic() + WAIT,
                         lambda s: all(len(f.ids) == 3 for f in s.followers))
    finally:
        swarm.close()
    print(f"\nwith {IDLE_STREAMS} streams open: slowest answer {max(timings) * 1000:.0f} ms")
    assert max(timings) < ANSWER_SECONDS


def test_a_thousand_followers_of_one_session_each_get_every_event_once_in_order(server):
    sid = open_session(server.base)
    started = time.monotonic()
    swarm = Swarm(*host_port(server.base), [f"/api/remote/sessions/{sid}/stream"] * FOLLOWERS)
    try:
        assert swarm.run(time.monotonic() + WAIT,
                         lambda s: all(f.status is not None for f in s.followers))
        assert {f.status for f in swarm.followers} == {200}
        for n in range(POSTS):
            status, body = post(server.base, sid, n * LINES, LINES)
            assert status == 200 and body["accepted"] == LINES, body
        status, body = call(server.base, "POST", f"/api/remote/sessions/{sid}/complete",
                            {"exit_code": 0})
        assert status == 200, body
        assert swarm.run(time.monotonic() + WAIT, lambda s: all(f.ended for f in s.followers))
    finally:
        swarm.close()
    print(f"\n{FOLLOWERS} followers x {POSTS * LINES} events in {time.monotonic() - started:.1f} s")
    for follower in swarm.followers:
        assert follower.ids == list(range(POSTS * LINES))


@pytest.fixture
def secured(tmp_path):
    env = {"TURNLOG_MAX_STREAMS_PER_TOKEN": "2", "TURNLOG_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    with servers.gunicorn(tmp_path, env=env, auth=True) as app:
        runner = app.new_token("create-runner-token", "--machine", "m1", "--any-user")
        reader = app.new_token("create-user-token", "--user", "alice")
        other = app.new_token("create-user-token", "--user", "alice")
        sid = open_session(app.base, token=runner, user_id="alice")
        yield app, sid, reader, other


def open_leases(server):
    with closing(sqlite3.connect(server.db_file)) as conn:
        return conn.execute("SELECT COUNT(*) FROM stream_leases").fetchone()[0]


def stream(server, sid, token):
    return EventStream(server.base, f"/api/remote/sessions/{sid}/stream",
                       {"Authorization": f"Bearer {token}"})


def test_a_token_over_its_stream_limit_gets_429_and_others_are_not_counted(secured):
    server, sid, reader, other = secured
    first, second = stream(server, sid, reader), stream(server, sid, reader)
    try:
        assert (first.status, second.status) == (200, 200)
        request = urllib.request.Request(server.base + f"/api/remote/sessions/{sid}/stream",
                                         headers={"Authorization": f"Bearer {reader}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=WAIT)
        assert refused.value.code == 429
        assert int(refused.value.headers["Retry-After"]) >= 1
        error = json.loads(refused.value.read())["error"]
        assert error["code"] == "too_many_streams"
        assert error["details"] == {"limit": 2, "open_streams": 2}
        theirs = stream(server, sid, other)  # another token has slots of its own
        assert theirs.status == 200
        theirs.close()
    finally:
        first.close()
        second.close()


def test_a_closed_stream_is_released_within_one_heartbeat(secured):
    server, sid, reader, _ = secured
    polite, rude = stream(server, sid, reader), stream(server, sid, reader)
    assert (polite.status, rude.status) == (200, 200)
    assert open_leases(server) == 2
    polite.close()  # FIN
    rude.kill()  # RST
    closed_at = time.monotonic()
    while open_leases(server) and time.monotonic() - closed_at < HEARTBEAT + RELEASE_SLACK:
        time.sleep(0.05)
    released_after = time.monotonic() - closed_at
    assert open_leases(server) == 0
    print(f"\nboth streams released {released_after * 1000:.0f} ms after the client closed")
    again = stream(server, sid, reader)  # the slots are free again
    assert again.status == 200
    again.close()


def refused_stream(server, sid, token):
    request = urllib.request.Request(server.base + f"/api/remote/sessions/{sid}/stream",
                                     headers={"Authorization": f"Bearer {token}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=WAIT)
    assert refused.value.code == 429 and int(refused.value.headers["Retry-After"]) >= 1
    error = json.loads(refused.value.read())["error"]
    assert error["code"] == "too_many_streams"
    return error


def test_a_user_over_their_stream_limit_gets_429_whichever_token_asks(tmp_path):
    """Streams are counted per user as well as per token (issue 29)."""
    env = {"TURNLOG_MAX_STREAMS_PER_TOKEN": "2", "TURNLOG_MAX_STREAMS_PER_USER": "3",
           "TURNLOG_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    with servers.gunicorn(tmp_path, env=env, auth=True) as server:
        runner = server.new_token("create-runner-token", "--machine", "m1", "--any-user")
        first, second = (server.new_token("create-user-token", "--user", "alice") for _ in range(2))
        bob = server.new_token("create-user-token", "--user", "bob")
        sid = open_session(server.base, token=runner, user_id="alice")
        bobs = open_session(server.base, token=runner, user_id="bob")
        held = [stream(server, sid, first), stream(server, sid, first), stream(server, sid, second)]
        try:
            assert [s.status for s in held] == [200, 200, 200]
            error = refused_stream(server, sid, second)  # its token has a slot; alice has none
            assert error["details"] == {"limit": 3, "open_streams": 3, "user_id": "alice",
                                        "scope": "user"}
            assert "TURNLOG_MAX_STREAMS_PER_USER" in error["message"]
            theirs = stream(server, bobs, bob)  # another user has slots of their own
            assert theirs.status == 200
            theirs.close()
        finally:
            for s in held:
                s.close()


def test_under_gthread_a_worker_serves_fewer_streams_than_it_has_threads(tmp_path):
    """gunicorn.conf.py caps a gthread worker's streams at half its threads: the next
    is refused (429), and the worker still answers other requests."""
    env = {"GUNICORN_WORKER_CLASS": "gthread", "TURNLOG_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    with servers.gunicorn(tmp_path, env=env, workers=1, threads=4, auth=True) as server:
        runner = server.new_token("create-runner-token", "--machine", "m1", "--any-user")
        reader = server.new_token("create-user-token", "--user", "alice")
        sid = open_session(server.base, token=runner, user_id="alice")
        held = [stream(server, sid, reader), stream(server, sid, reader)]
        try:
            assert [s.status for s in held] == [200, 200]
            error = refused_stream(server, sid, reader)
            assert error["details"]["scope"] == "process" and error["details"]["limit"] == 2
            status, _ = call(server.base, "GET", f"/api/remote/sessions/{sid}", token=reader)
            assert status == 200
        finally:
            for s in held:
                s.close()
