"""GET /api/remote/sessions/<id>/stream: replay the output buffer, then follow it live."""
from flask import Blueprint
from flask import Response
from flask import current_app
from flask import request

from app import db
from app.auth import current_caller
from app.auth import requires
from app.core.errors import InvalidEventId
from app.errors import ApiError
from app.providers.surrogates import has_unstorable
from app.services import streaming as service
from app.services.access import USER
from app.streaming import live
from app.streaming import sse

bp = Blueprint("streaming", __name__, url_prefix="/api/remote/sessions")
MAX_CLIENT_ID = 200
# Events per write. A whole page framed as one string costs more per event to frame
# and hand over than writes of a few hundred events (fresh memory for the text, its
# bytes and the HTTP chunk, copied out of cache; docs/performance.md, Streaming); a
# page's writes still all leave at once. A write
# also ends once it holds WRITE_BYTES of event JSON: 256 lines of 2 MiB would be one
# write of half a GiB.
WRITE_EVENTS = 256
WRITE_BYTES = 256 * 1024


@bp.get("/<session_id>/stream")
@requires(USER, cookie=True)
def stream(session_id):
    """The session's output as `text/event-stream`, resumable by event index.

    The cursor is the `Last-Event-ID` header, else `?after=`, else the cursor
    stored for `?client_id=`, else the start of the buffer. A token holds at most
    MAX_STREAMS_PER_TOKEN streams at once (429 `too_many_streams` beyond).
    """
    client_id = _client_id()
    new_uow = db.detached_units_of_work()
    cursor = service.resume_cursor(session_id, new_uow, after=_requested_cursor(),
                                   client_id=client_id, caller=current_caller())
    retry_ms = current_app.config["STREAM_RETRY_MS"]
    follower = live.open_follower(session_id, current_caller())
    feed = service.Feed(session_id, cursor, new_uow, client_id=client_id, wait=follower.wait,
                        shared=follower.shared)
    records = service.follow(feed, settings=stream_settings(), caller=current_caller())
    return event_stream_response(_frames(session_id, follower.tended(records), retry_ms),
                                 follower)


def stream_settings():
    """The configured page size, poll, heartbeat and lifetime of a stream."""
    return service.StreamSettings(
        page_size=current_app.config["STREAM_PAGE_SIZE"],
        page_bytes=current_app.config["STREAM_PAGE_BYTES"],
        poll_seconds=current_app.config["STREAM_POLL_SECONDS"],
        heartbeat_seconds=current_app.config["STREAM_HEARTBEAT_SECONDS"],
        auth_check_seconds=current_app.config["STREAM_AUTH_CHECK_SECONDS"],
        max_seconds=current_app.config["STREAM_MAX_SECONDS"],
    )


def event_stream_response(frames, follower):
    """`frames` as `text/event-stream`; the follower is closed with the response."""
    response = Response(frames, mimetype="text/event-stream")
    response.call_on_close(follower.close)
    response.headers["Cache-Control"] = "no-store"  # a transcript: never cached
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response


def _output_writes(page):
    """The page's SSE text in writes of at most WRITE_EVENTS events and about WRITE_BYTES,
    each made when the one before has been handed on."""
    events, start, size = page.events, 0, 0
    for at, (_, data) in enumerate(events):
        size += len(data)
        if at + 1 - start >= WRITE_EVENTS or size >= WRITE_BYTES:
            yield sse.output_events(events[start:at + 1])
            start, size = at + 1, 0
    if start < len(events):
        yield sse.output_events(events[start:])


def _frames(session_id, records, retry_ms):
    """SSE text for each record; a page leaves at once, in writes of WRITE_EVENTS events.
    A page the live hub shares is framed once for all its followers (and kept while
    they write it); a replay page, read for this follower alone, is framed a write at a
    time, so a follower holds its page and one write, not a page of frames besides."""
    yield sse.retry(retry_ms)
    for record in records:
        if isinstance(record, service.Page) and record.shared:
            yield from live.shared_writes(record, _output_writes)
        elif isinstance(record, service.Page):
            for text in _output_writes(record):
                yield text.encode()
        else:
            yield _control_frame(session_id, record)


def reset_frame(session_id, record):
    """`reset`: the id moves the client's Last-Event-ID past the gap, so a reconnect
    does not ask for the expired events again (on /events: after all of that line)."""
    return sse.event("reset", {
        "reason": "cursor_expired",
        "requested_after": record.requested_after,
        "oldest_event_index": record.oldest_event_index,
        "transcript": f"/api/remote/sessions/{session_id}",
    }, record.oldest_event_index - 1)


def _control_frame(session_id, record):
    if isinstance(record, service.Reset):
        return reset_frame(session_id, record)
    if isinstance(record, service.End):
        return sse.event("end", {"status": record.status, "exit_code": record.exit_code,
                                 "last_event_index": record.last_event_index})
    return sse.comment("keep-alive")


def _requested_cursor():
    raw = request.headers.get("Last-Event-ID") or request.args.get("after")
    if raw in (None, ""):
        return None
    try:
        cursor = int(raw)
    except ValueError:
        raise InvalidEventId("the cursor must be an event index", {"cursor": raw}) from None
    if not service.FROM_START <= cursor < 2**63:
        raise InvalidEventId("the cursor is out of range", {"cursor": cursor})
    return cursor


def _client_id():
    client_id = request.args.get("client_id") or None
    if client_id is not None and len(client_id) > MAX_CLIENT_ID:
        raise ApiError(422, "invalid_client_id",
                       f"client_id must be at most {MAX_CLIENT_ID} characters", {})
    if client_id is not None and has_unstorable(client_id):
        raise ApiError(422, "invalid_client_id", "client_id must not hold a NUL character", {})
    return client_id
