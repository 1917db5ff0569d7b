"""Many Server-Sent Events clients in one thread: raw non-blocking sockets and epoll.

A thousand followers cost a thousand sockets and no thread each, so the tests and
bench/followers.py can hold as many streams as they ask the server to hold.
Each follower keeps the ids of the `output` events it received, with the time
(`time.monotonic()`, the same clock in every process of the host) each arrived.
"""
import selectors
import socket
import time
from dataclasses import dataclass
from dataclasses import field


@dataclass
class Follower:
    path: str
    sock: socket.socket
    status: int | None = None
    ids: list = field(default_factory=list)  # output event ids, in arrival order
    arrived: list = field(default_factory=list)  # monotonic time of each
    ended: bool = False  # an `end` event came
    closed: bool = False  # the server closed the connection
    raw: bytes = b""  # bytes not yet de-chunked (or the head)
    body: bytes = b""  # body bytes not yet cut into SSE blocks
    head_done: bool = False


def request_bytes(host, path, headers):
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Accept: text/event-stream"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


class Swarm:
    """Open one stream per path (connections opened in order, each sent its GET)."""

    def __init__(self, host, port, paths, headers=None, connect_timeout=10.0):
        self.selector = selectors.DefaultSelector()
        self.followers = []
        for path in paths:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
            sock.sendall(request_bytes(f"{host}:{port}", path, headers))
            sock.setblocking(False)
            follower = Follower(path, sock)
            self.followers.append(follower)
            self.selector.register(sock, selectors.EVENT_READ, follower)

    def run(self, deadline, until):
        """Read whatever arrives until `until(swarm)` holds or the monotonic `deadline`
        passes; returns whether `until` held."""
        while not until(self):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for key, _ in self.selector.select(min(left, 0.5)):
                self._read(key.data)
        return True

    def close(self):
        for follower in self.followers:
            if not follower.closed:
                self.selector.unregister(follower.sock)
                follower.sock.close()
                follower.closed = True
        self.selector.close()

    def _read(self, follower):
        try:
            data = follower.sock.recv(262144)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        now = time.monotonic()
        if not data:
            self.selector.unregister(follower.sock)
            follower.sock.close()
            follower.closed = True
            return
        follower.raw += data
        if not follower.head_done:
            head, sep, rest = follower.raw.partition(b"\r\n\r\n")
            if not sep:
                return
            follower.status = int(head.split(b" ", 2)[1])
            follower.head_done, follower.raw = True, rest
        _dechunk(follower)
        *blocks, follower.body = follower.body.split(b"\n\n")
        for block in blocks:
            _take_block(follower, block, now)


def _dechunk(follower):
    """Move whole HTTP chunks from `raw` to `body` (the server always sends chunked)."""
    raw = follower.raw
    at = 0
    while True:
        size_end = raw.find(b"\r\n", at)
        if size_end < 0:
            break
        size = int(raw[at:size_end].split(b";")[0], 16)
        end = size_end + 2 + size + 2
        if len(raw) < end:
            break
        follower.body += raw[size_end + 2:end - 2]
        at = end
    follower.raw = raw[at:]


def _take_block(follower, block, now):
    event_id = name = None
    for line in block.split(b"\n"):
        if line.startswith(b"id: "):
            event_id = line[4:]
        elif line.startswith(b"event: "):
            name = line[7:]
    if name == b"output":
        follower.ids.append(int(event_id))
        follower.arrived.append(now)
    elif name == b"end":
        follower.ended = True
