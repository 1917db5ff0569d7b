"""GET /api/remote/sessions/<id>/events: the live events, replayed then followed."""
from flask import current_app
from flask import request

from app import db
from app.auth import current_caller
from app.auth import requires
from app.services import streaming
from app.services.access import USER
from app.services.live import events as service
from app.streaming import live
from app.streaming import sse
from app.streaming.routes import WRITE_EVENTS
from app.streaming.routes import bp
from app.streaming.routes import event_stream_response
from app.streaming.routes import reset_frame
from app.streaming.routes import stream_settings


@bp.get("/<session_id>/events")
@requires(USER, cookie=True)
def events(session_id):
    """The session's normalized live events as `text/event-stream`, resumable by
    event id: the `Last-Event-ID` header, else `?after=`, else from the start."""
    cursor = service.parse_cursor(request.headers.get("Last-Event-ID")
                                  or request.args.get("after"))
    new_uow = db.detached_units_of_work()
    service.open_events(session_id, new_uow, caller=current_caller())
    follower = live.open_follower(session_id, current_caller())
    feed = service.EventFeed(session_id, cursor, new_uow, wait=follower.wait,
                             shared=follower.shared)
    records = streaming.follow(feed, settings=stream_settings(), caller=current_caller())
    return event_stream_response(_frames(session_id, follower.tended(records),
                                         current_app.config["STREAM_RETRY_MS"]), follower)


def _event_writes(record):
    batch = record.events
    return ["".join([f"id: {event_id}\nevent: {name}\ndata: {data}\n\n"
                     for event_id, name, data in batch[at:at + WRITE_EVENTS]])
            for at in range(0, len(batch), WRITE_EVENTS)]


def _frames(session_id, records, retry_ms):
    yield sse.retry(retry_ms)
    for record in records:
        if isinstance(record, service.Events):
            yield from live.shared_writes(record, _event_writes)
        elif isinstance(record, streaming.Reset):
            yield reset_frame(session_id, record)
        elif isinstance(record, service.EventsEnd):
            yield sse.event("end", {"status": record.status, "exit_code": record.exit_code,
                                    "last_event_id": record.last_event_id})
        else:
            yield sse.comment("keep-alive")
