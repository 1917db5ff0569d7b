"""The live SSE stream over real sockets: gunicorn alone, and nginx (docs/deploy.md) in front.

The client reads the response incrementally from a raw socket, so these tests see what
a browser sees: when bytes arrive, how the stream is framed, and what survives a
connection killed in the middle of the stream.
"""
import json
import socket
import sqlite3
import struct
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from tests import claude_lines as cl
from tests import servers
from tests.servers import call

HEARTBEAT = 0.5  # TURNLOG_STREAM_HEARTBEAT_SECONDS for the served app
PROMPT = 2.0  # seconds within which a posted line or a heartbeat must reach the client
LINES, BATCH, PAUSE = 300, 10, 0.02  # the producer's output, in batches with pauses
KILL_AFTER = 60  # output events the first connection reads before it is killed
READ_SECONDS = 20  # upper bound for reading any one stream


@dataclass(frozen=True)
class Frame:
    """One SSE block: an event (name, id, parsed data), a comment, or a retry."""

    event: str | None = None
    id: str | None = None
    data: object = None
    comment: str | None = None
    retry: int | None = None


def parse_block(block):
    """One block of SSE text (no blank lines inside) as a Frame, per the WHATWG parser."""
    fields, data, comments = {}, [], []
    for line in block.split("\n"):
        if line.startswith(":"):
            comments.append(line[1:].removeprefix(" "))
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        else:
            fields[name] = value
    if "event" in fields or data:
        return Frame(event=fields.get("event", "message"), id=fields.get("id"),
                     data=json.loads("\n".join(data)))
    if "retry" in fields:
        return Frame(retry=int(fields["retry"]))
    return Frame(comment="\n".join(comments))


class EventStream:
    """GET one stream over a raw socket and hand out its frames as they arrive."""

    def __init__(self, base, path, headers=None, timeout=5.0):
        url = urlsplit(base)
        self.sock = socket.create_connection((url.hostname, url.port), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", f"Host: {url.netloc}", "Accept: text/event-stream",
                 "Accept-Encoding: gzip", "Cache-Control: no-cache"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
        self._raw = b""  # bytes read from the socket, not yet de-chunked
        self._body = b""  # body bytes not yet cut into blocks
        self.finished = False  # the response (or the connection) has ended
        self.status, self.headers = self._read_head(time.monotonic() + timeout)
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self._take_body()

    def next_frame(self, deadline):
        """The next complete frame, or None once the response has ended.

        Raises TimeoutError when nothing complete arrives before `deadline`.
        """
        while True:
            end = self._body.find(b"\n\n")
            if end >= 0:
                block, self._body = self._body[:end], self._body[end + 2:]
                return parse_block(block.decode("utf-8"))
            if self.finished:
                return None
            self._recv(deadline)
            self._take_body()

    def frames_until(self, deadline, stop):
        """Frames up to and including the first one for which `stop(frame)` holds."""
        frames = []
        while True:
            frame = self.next_frame(deadline)
            if frame is None:
                return frames
            frames.append(frame)
            if stop(frame):
                return frames

    def kill(self):
        """Drop the connection the rude way: RST, no FIN, whatever is still unread."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self):
        self.sock.close()

    def _read_head(self, deadline):
        while b"\r\n\r\n" not in self._raw:
            self._recv(deadline)
            if self.finished:
                raise AssertionError(f"connection closed before the headers: {self._raw!r}")
        head, self._raw = self._raw.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), headers

    def _recv(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete frame before the deadline")
        self.sock.settimeout(left)
        data = self.sock.recv(65536)  # socket.timeout is TimeoutError
        if data:
            self._raw += data
        else:
            self.finished = True

    def _take_body(self):
        """Move whole chunks (or, unchunked, everything) from the socket bytes to the body."""
        if not self.chunked:
            self._body += self._raw
            self._raw = b""
            return
        while True:
            size_end = self._raw.find(b"\r\n")
            if size_end < 0:
                return
            size = int(self._raw[:size_end].split(b";")[0], 16)
            if size == 0:
                self.finished = True
                return
            chunk_end = size_end + 2 + size + 2
            if len(self._raw) < chunk_end:
                return
            self._body += self._raw[size_end + 2:chunk_end - 2]
            self._raw = self._raw[chunk_end:]


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
    assert stream.headers["cache-control"] == "no-cache"
    assert "content-encoding" not in stream.headers  # the client accepts gzip; none is used
    if base == app_server.base:
        assert stream.headers["x-accel-buffering"] == "no"
    else:  # nginx acts on X-Accel-* headers and does not pass them on
        assert "x-accel-buffering" not in stream.headers
