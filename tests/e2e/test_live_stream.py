"""The live SSE stream over real sockets: gunicorn alone, and nginx (docs/deploy.md) in front.

The client reads the response incrementally from a raw socket, so these tests see what
a browser sees: when bytes arrive, how the stream is framed, and what survives a
connection killed in the middle of the stream.
"""
import sqlite3
import threading
import time
from contextlib import closing

import pytest

from tests import claude_lines as cl
from tests import servers
from tests.servers import call
from tests.sse_client import EventStream

HEARTBEAT = 0.5  # TURNLOG_STREAM_HEARTBEAT_SECONDS for the served app
PROMPT = 2.0  # seconds within which a posted line or a heartbeat must reach the client
LINES, BATCH, PAUSE = 300, 10, 0.02  # the producer's output, in batches with pauses
KILL_AFTER = 60  # output events the first connection reads before it is killed
READ_SECONDS = 20  # upper bound for reading any one stream


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    env = {"TURNLOG_STREAM_HEARTBEAT_SECONDS": str(HEARTBEAT)}
    with servers.gunicorn(tmp_path_factory.mktemp("gunicorn"), env=env, workers=2,
                          threads=8) as app:
        yield app


@pytest.fixture(scope="module")
def proxy(app_server, tmp_path_factory):
    with servers.nginx(tmp_path_factory.mktemp("nginx"), app_server.address) as nginx:
        yield nginx


@pytest.fixture(params=["gunicorn", "nginx"])
def base(request, app_server):
    """The URL a client uses: gunicorn directly, or nginx in front of it."""
    if request.param == "gunicorn":
        return app_server.base
    return request.getfixturevalue("proxy").base


@pytest.fixture
def open_stream(base):
    """open_stream(sid, headers) -> EventStream; every stream is closed after the test."""
    opened = []

    def open_(sid, headers=None):
        stream = EventStream(base, f"/api/remote/sessions/{sid}/stream", headers)
        opened.append(stream)
        assert stream.status == 200, stream.headers
        return stream

    yield open_
    for stream in opened:
        stream.close()


def new_session(base):
    status, body = call(base, "POST", "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201, body
    return body["session"]["session_id"]


def post_output(base, sid, chunks):
    status, body = call(base, "POST", f"/api/remote/sessions/{sid}/output", {"chunks": chunks})
    assert status == 200 and body["accepted"] == len(chunks), (status, body)


def produced_line(n):
    """What the runner prints as line n: JSON turns, plain text, and awkward characters."""
    if n % 50 == 49:
        return cl.result()
    if n % 3 == 0:
        return cl.assistant(cl.text(f"turn text {n} — ünïcödé ✓"))
    if n == 7:
        return 'tricky "quotes" \\ and an SSE look-alike\n\nid: 999\ndata: {}'
    return f"plain line {n}"


def stream_of(n):
    return "stderr" if n % 7 == 6 else "stdout"


def test_a_stream_killed_mid_way_resumes_from_its_last_id_with_no_gap_or_repeat(
        base, app_server, open_stream):
    sid = new_session(base)
    posted = [(stream_of(n), produced_line(n)) for n in range(LINES)]
    errors = []

    def produce():
        try:
            for start in range(0, LINES, BATCH):
                post_output(base, sid, [{"seq": n, "stream": posted[n][0], "data": posted[n][1]}
                                        for n in range(start, start + BATCH)])
                time.sleep(PAUSE)
            status, body = call(base, "POST", f"/api/remote/sessions/{sid}/complete",
                                {"exit_code": 0})
            assert status == 200, body
        except Exception as err:  # reported by the main thread
            errors.append(err)

    received, ends = [], []  # (event_index, stream, payload) in arrival order; end data

    def take(frame):
        if frame.event == "output":
            assert frame.id == str(frame.data["event_index"])
            received.append((frame.data["event_index"], frame.data["stream"],
                             frame.data["payload"]))
        elif frame.event == "end":
            ends.append(frame.data)
        else:
            assert frame.event is None, frame  # only comments and retry besides

    deadline = time.monotonic() + READ_SECONDS
    first = open_stream(sid)
    assert first.next_frame(deadline).retry == 3000  # live before any output exists
    producer = threading.Thread(target=produce)
    producer.start()
    try:
        while len(received) < KILL_AFTER:
            frame = first.next_frame(deadline)
            assert frame is not None, "the first connection ended early"
            take(frame)
        first.kill()
        killed_at = len(received)
        last_id = received[-1][0]
        second = open_stream(sid, {"Last-Event-ID": str(last_id)})
        frames = second.frames_until(deadline, lambda f: f.event == "end")
        for frame in frames:
            take(frame)
        assert second.next_frame(time.monotonic() + PROMPT) is None  # the response ends
    finally:
        producer.join(timeout=READ_SECONDS)
    assert errors == []
    assert killed_at < LINES, "the first connection was not killed mid-stream"

    assert [r[0] for r in received] == list(range(LINES))  # in order, no gap, no repeat
    assert [(r[1], r[2]) for r in received] == posted
    with closing(sqlite3.connect(app_server.db_file)) as conn:
        stored = conn.execute("SELECT event_index, stream, payload FROM remote_runtime_outputs "
                              "WHERE session_id = ? ORDER BY event_index", (sid,)).fetchall()
    assert stored == received
    assert ends == [{"status": "completed", "exit_code": 0, "last_event_index": LINES - 1}]


def test_an_output_posted_while_the_client_waits_arrives_promptly(base, open_stream):
    sid = new_session(base)
    stream = open_stream(sid)
    assert stream.next_frame(time.monotonic() + PROMPT).retry == 3000  # headers + first bytes
    post_output(base, sid, [{"seq": 0, "data": "hello, live"}])
    posted_at = time.monotonic()
    frames = stream.frames_until(posted_at + PROMPT, lambda f: f.event == "output")
    assert time.monotonic() - posted_at < PROMPT
    assert frames[-1].data["payload"] == "hello, live"
    assert frames[-1].id == "0"


def test_an_idle_stream_sends_keep_alive_comments(base, open_stream):
    sid = new_session(base)
    stream = open_stream(sid)
    opened_at = time.monotonic()
    frames = stream.frames_until(opened_at + PROMPT, lambda f: f.comment == "keep-alive")
    assert time.monotonic() - opened_at < PROMPT
    assert [f.event for f in frames if f.event] == []  # nothing else happened meanwhile


def test_stream_headers_survive_the_proxy(base, open_stream, app_server):
    stream = open_stream(new_session(base))
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-store"
    assert "content-encoding" not in stream.headers  # the client accepts gzip; none is used
    if base == app_server.base:
        assert stream.headers["x-accel-buffering"] == "no"
    else:  # nginx acts on X-Accel-* headers and does not pass them on
        assert "x-accel-buffering" not in stream.headers
