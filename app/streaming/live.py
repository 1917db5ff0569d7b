"""What every live follower of a session's buffer holds while it streams: a watch on
the process's live hub (its wake-ups), a lease counted against its token's and its
user's stream limits, a place among the process's streams (capped under gthread,
where each holds a thread), and a check that the client is still there. `/stream` uses it; any other
feed of the buffer can use it the same way:

    follower = live.open_follower(session_id, caller)   # 429 when over the limit
    feed = streaming.Feed(..., wait=follower.wait, shared=follower.shared)
    records = follower.tended(streaming.follow(feed, ...))
    response.call_on_close(follower.close)

The pages the hub shares go to every caught-up follower of their feed in the process;
`shared_writes` frames each once for all of them.
"""
import math
import select
import socket
import threading
import time
import weakref

from flask import current_app
from flask import request

from app import db
from app.core.errors import TooManyStreams
from app.services.access import USER
from app.services.live import leases as stream_leases
from app.services.live.hub import LiveHub
from app.services.live.hub import marks_reader
from app.services.live.hub import rows_reader
from app.services.streaming import Heartbeat

HUB_KEY = "turnlog_live_hub"
SLOTS_KEY = "turnlog_stream_slots"
# A lease outlives its last renewal by this many heartbeats, so a busy process is
# not counted out, and a dead one's streams free their slots soon after.
LEASE_HEARTBEATS = 3
_hub_lock = threading.Lock()
# The SSE writes of the records the live hub shares, made by the first follower to
# write one and dropped with it (the hub keeps a few pages per session, and each of
# their feeds' records). Only get and setdefault are used, each one dict operation,
# so followers in other threads need no lock; nothing iterates it.
_framed = weakref.WeakKeyDictionary()


def hub():
    """The live hub of this app in this process, made on first use (after gunicorn's
    fork and gevent's patching, since the app loads in each worker)."""
    app = current_app._get_current_object()
    with _hub_lock:
        if HUB_KEY not in app.extensions:
            new_uow = db.detached_units_of_work()
            app.extensions[HUB_KEY] = LiveHub(marks_reader(new_uow), app.config["STREAM_POLL_SECONDS"],
                                              read_rows=rows_reader(new_uow, app.config["STREAM_PAGE_BYTES"]),
                                              page_size=app.config["STREAM_PAGE_SIZE"],
                                              listen=db.notification_listener())
        return app.extensions[HUB_KEY]


def moved(session_id):
    """`session_id`'s buffer or status changed in a commit of this process: its followers
    here read now, not at the next poll (other processes learn it from the poll, or on
    PostgreSQL from the NOTIFY). Makes no hub where none follows anything."""
    found = current_app.extensions.get(HUB_KEY)
    if found is not None:
        found.kick(session_id)


def open_follower(session_id, caller):
    """A Follower of `session_id` for `caller`; TooManyStreams (429) when its token
    already holds MAX_STREAMS_PER_TOKEN open streams, its user MAX_STREAMS_PER_USER,
    or this process MAX_STREAMS_PER_PROCESS."""
    config = current_app.config
    heartbeat = config["STREAM_HEARTBEAT_SECONDS"]
    new_uow = db.detached_units_of_work()
    free_slot = take_stream_slot()
    try:
        lease = None
        if caller.token_id is not None:
            lease = stream_leases.acquire(caller.token_id, session_id, new_uow,
                                          limit=config["MAX_STREAMS_PER_TOKEN"],
                                          ttl_seconds=heartbeat * LEASE_HEARTBEATS,
                                          retry_after=heartbeat,
                                          user_id=caller.name if caller.kind == USER else None,
                                          user_limit=config["MAX_STREAMS_PER_USER"])
        client = request.environ.get("gunicorn.socket")
        return Follower(hub().watch(session_id), lease, new_uow, heartbeat, client, free_slot)
    except BaseException:
        free_slot()
        raise


def shared_writes(record, frame):
    """`frame(record)`'s writes, made once per record and kept while it lives: a
    record the live hub shares (a `shared` Page, or the Events of one) goes to every
    follower of its feed, framed once. The text is encoded here too, once, so each
    write hands the server bytes as they are."""
    writes = _framed.get(record)
    if writes is None:
        writes = _framed.setdefault(record, [text.encode() for text in frame(record)])
    return writes


def take_stream_slot():
    """Count one more stream in this process (any long-lived response that holds a thread
    under gthread: the runner's command channel too); TooManyStreams (429) past
    MAX_STREAMS_PER_PROCESS. Returns the call that frees it, to run when the response
    closes (after the request context has gone, hence bound here)."""
    config = current_app.config
    app = current_app._get_current_object()
    with _hub_lock:
        slots = app.extensions.setdefault(SLOTS_KEY, StreamSlots())
    return slots.take(config["MAX_STREAMS_PER_PROCESS"], config["STREAM_HEARTBEAT_SECONDS"])


class StreamSlots:
    """The streams open in this app, for MAX_STREAMS_PER_PROCESS (gthread: each holds one
    of the worker's threads; gunicorn.conf.py sets the cap below their number). A worker
    loads one app, so per app is per process; tests' apps each count their own."""

    def __init__(self):
        self._lock = threading.Lock()
        self.open = 0

    def take(self, limit, retry_after):
        """One more stream, or TooManyStreams when `limit` (0: none) are open; returns
        the call that gives it back (once, however often it is called)."""
        with self._lock:
            if limit and self.open >= limit:
                raise TooManyStreams(
                    f"this server process already serves {self.open} streams, the most it"
                    " may (TURNLOG_MAX_STREAMS_PER_PROCESS: under the gthread worker each holds a"
                    " thread, and some must stay free for other requests); retry after a while",
                    {"limit": limit, "open_streams": self.open, "scope": "process"},
                    retry_after=max(1, math.ceil(retry_after)))
            self.open += 1
        freed = []

        def free():
            with self._lock:
                if not freed:
                    freed.append(True)
                    self.open -= 1
        return free


class Follower:
    def __init__(self, watch, lease, new_uow, heartbeat_seconds, client_socket, free_slot,
                 monotonic=time.monotonic):
        self.wait = watch.wait
        self.shared = watch.shared
        self._watch = watch
        self._lease = lease
        self._new_uow = new_uow
        self._heartbeat = heartbeat_seconds
        self._client = client_socket
        self._free_slot = free_slot
        self._monotonic = monotonic
        self._closed = False

    def tended(self, records):
        """`records` passed on, renewing the lease every heartbeat interval, and ending
        at a heartbeat once the client has gone (rather than at the next write that
        fails, which after a plain close is the second one)."""
        renewed = self._monotonic()
        for record in records:
            if isinstance(record, Heartbeat) and client_gone(self._client):
                return
            if self._lease is not None and self._monotonic() - renewed >= self._heartbeat:
                stream_leases.renew(self._lease, self._new_uow,
                                    ttl_seconds=self._heartbeat * LEASE_HEARTBEATS)
                renewed = self._monotonic()
            yield record

    def close(self):
        """Leave the hub and free the token's, user's and process's slots; safe to call
        more than once."""
        if self._closed:
            return
        self._closed = True
        self._free_slot()
        self._watch.close()
        lease, self._lease = self._lease, None
        if lease is not None:
            stream_leases.release(lease, self._new_uow)


def client_gone(sock):
    """True when the client closed or reset its side of the connection. A client that
    sent nothing (or a next request) is still there; so is an unknown socket."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):  # reset, or already closed
        return True
