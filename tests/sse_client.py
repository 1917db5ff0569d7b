"""A Server-Sent Events client over a raw socket, for tests against real servers.

It reads the response incrementally, so a test sees what a browser sees: when bytes
arrive, how the stream is framed, and what survives a connection killed mid-stream.
"""
import json
import socket
import struct
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


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
