"""Follow a session's live events across dropped connections, each event once.

`/events` (normalized turn events) is read unless `raw` asks for `/stream` (the
raw output lines); a server without `/events` answers its unknown-route 404, and
the feed falls back to `/stream`, whose own 404 (no turnlog API at that URL at all)
is raised. After a drop it reconnects with the last id it handed out as
`Last-Event-ID`, and it skips any event at or before that id, so nothing is lost and
nothing is repeated.
"""
import codecs
import time

import requests

from app.client.backoff import Backoff
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.sse import SseParser
from app.client.sse import arriving

API = "/api/remote/sessions"
# The server sends a heartbeat after 15 s of silence; three missed ones mean a dead link.
READ_TIMEOUT_SECONDS = 45


def follow(client, session_id, *, after=None, raw=False, stop_at_end=True, backoff=None,
           sleep=time.sleep, on_retry=None):
    """Yield `Event`s of the session; returns after `end` (unless not `stop_at_end`).
    `on_retry(reason, delay, tries)`, if given, hears of each failed try before its wait."""
    retry = _Retry(backoff or Backoff(), sleep, on_retry)
    endpoint = "stream" if raw else "events"
    cursor = None if after is None else str(after)
    while True:
        try:
            response = client.open_stream(f"{API}/{session_id}/{endpoint}", cursor,
                                          READ_TIMEOUT_SECONDS)
        except ApiError as err:
            if endpoint == "events" and _no_route(err):
                endpoint = "stream"  # an older server: no normalized events yet
                continue  # (where no API is at all, /stream says so: raised below)
            if not err.transient:
                raise
            retry.wait(f"{err.status} {err.code}", err.retry_after)
            continue
        except Unreachable as err:
            retry.wait(str(err))
            continue
        retry.reset()
        try:
            for event in _events(response):
                if cursor is not None and event.id is not None and not _after(event.id, cursor):
                    continue
                if event.id is not None:
                    cursor = event.id
                yield event
                if event.event == "end" and stop_at_end:
                    return
        except requests.RequestException:
            pass  # dropped mid-stream: resume from the cursor
        finally:
            response.close()


def _no_route(err):
    """Whether `err` is a 404 for the route (not for the session): turnlog's own
    `not_found`, or the Misconfigured it is under a --server with a path (app.client.http)."""
    return err.status == 404 and (err.code == "not_found" or isinstance(err, Misconfigured))


class _Retry:
    """The waits between failed tries, each told to `on_retry` first (if given)."""

    def __init__(self, backoff, sleep, on_retry):
        self.backoff, self.sleep, self.on_retry = backoff, sleep, on_retry
        self.tries = 0

    def wait(self, reason, retry_after=None):
        self.tries += 1
        delay = self.backoff.next_delay(retry_after)
        if self.on_retry is not None:
            self.on_retry(reason, delay, self.tries)
        self.sleep(delay)

    def reset(self):
        self.backoff.reset()
        self.tries = 0


def _events(response):
    parser = SseParser()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for chunk in arriving(response):  # as it arrives, whatever the framing (app.client.sse)
        yield from parser.feed(decoder.decode(chunk))


def _after(event_id, cursor):
    """Whether `event_id` comes after `cursor` (`/stream` ids are integers, `/events` ids
    are `<line>.<n>`, compared as integer pairs; a bare `<line>` covers all of that line)."""
    def key(text, bare):
        line, _, n = text.partition(".")
        return (int(line), int(n) if n else bare)

    try:
        return key(event_id, -1) > key(cursor, float("inf"))
    except ValueError:
        return True
