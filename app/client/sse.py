"""Server-Sent Events framing, as the WHATWG spec reads a stream.

Feed it text as it arrives; it hands back each event at the blank line that ends
it. Lines end in LF, CRLF or CR (a CR at the end of a chunk waits for the next
one, which may hold its LF). Comments (`:`) are skipped, `retry:` is kept, and
the last event id persists across events, as EventSource's does.

`arriving(response)` reads a streamed response's body as it comes, whatever framing
the HTTP layer gives it.
"""
from dataclasses import dataclass

import requests
import urllib3

READ_BYTES = 65536


@dataclass(frozen=True)
class Event:
    """One dispatched event: its type, its data (lines joined by LF) and the last event id."""

    event: str
    data: str
    id: str | None


class SseParser:
    def __init__(self):
        self._buffer = ""
        self._data = []
        self._event = ""
        self.last_id = None
        self.retry_ms = None

    def feed(self, text):
        """The events completed by `text`, in order."""
        self._buffer += text
        events = []
        for line in self._lines():
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _lines(self):
        while True:
            cut = _first_break(self._buffer)
            if cut is None:
                return
            line, self._buffer = self._buffer[:cut[0]], self._buffer[cut[1]:]
            yield line

    def _line(self, line):
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon:
            value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self):
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return Event(event or "message", "\n".join(data), self.last_id)


def _first_break(buffer):
    """(start, end) of the first line break in `buffer`, or None when it is not known yet."""
    lf, cr = buffer.find("\n"), buffer.find("\r")
    if cr < 0 or (0 <= lf < cr):
        return None if lf < 0 else (lf, lf + 1)
    if cr + 1 == len(buffer):
        return None  # the LF of a CRLF may be in the next chunk
    return (cr, cr + 2) if buffer[cr + 1] == "\n" else (cr, cr + 1)


def arriving(response, size=READ_BYTES):
    """The body of a streamed requests `response`, in pieces as they arrive.

    `iter_content(None)` does so for a chunked body only: one neither chunked nor sized
    (an HTTP/1.0 proxy's answer, which ends at the close) it hands over whole at its
    end, and a stream of commands or events has none. urllib3's errors are raised as
    requests' (a dropped stream is a `requests.RequestException` either way).
    """
    while True:
        try:
            chunk = response.raw.read1(size, decode_content=True)
        except urllib3.exceptions.HTTPError as err:
            raise requests.exceptions.ConnectionError(err) from err
        if not chunk:
            return
        yield chunk
