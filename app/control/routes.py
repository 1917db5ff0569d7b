"""The control channel's routes (docs/control.md): thin views over
app.services.commands (runner side) and app.services.control (client side)."""
from flask import Blueprint
from flask import Response
from flask import current_app
from flask import request

from app import db
from app import schemas
from app.auth import current_caller
from app.auth import requires
from app.control import channel as ch
from app.core.errors import CommandNotFound
from app.core.errors import InvalidEventId
from app.errors import ApiError
from app.request_args import load_body
from app.request_args import read_whole_body
from app.services import commands as runner_side
from app.services import control
from app.services.access import RUNNER
from app.services.access import USER
from app.streaming import live

bp = Blueprint("control", __name__, url_prefix="/api/remote/sessions")
MAX_COMMAND_ID = 2**63 - 1


@bp.post("/<session_id>/runner")
@requires(RUNNER)
def attach(session_id):
    """POST .../runner: a runner serves the session and says what it offers."""
    body = load_body(schemas.runner_attach_schema)
    controls, seen_at = runner_side.attach_runner(
        session_id, body["controls"], db.writing(), caller=current_caller(),
        token_lifetime_seconds=current_app.config["WRITE_TOKEN_LIFETIME_SECONDS"])
    return {"runner": {"attached": True, "controls": controls, "seen_at": seen_at}}


@bp.get("/<session_id>/commands")
@requires(RUNNER)
def commands(session_id):
    """GET .../commands: the session's unacknowledged commands after the cursor, as
    Server-Sent Events (Accept: text/event-stream) or as one long poll (`wait`)."""
    after = _cursor()
    new_uow = db.detached_units_of_work()
    runner_side.open_channel(session_id, new_uow, caller=current_caller(),
                             token_lifetime_seconds=current_app.config["WRITE_TOKEN_LIFETIME_SECONDS"])
    bell, channel = ch.bell(), ch.channel()
    if request.accept_mimetypes.best == "text/event-stream":
        return _command_stream(session_id, after, new_uow, bell, channel)
    found = runner_side.wait_for_commands(session_id, after, new_uow, bell, channel,
                                          wait_seconds=_wait(), on_queued=bell.ring)
    return {"commands": [ch.command_data(c) for c in found],
            "last_command_id": found[-1].command_id if found else after}


def _command_stream(session_id, after, new_uow, bell, channel):
    """The channel as `text/event-stream`; it holds one of the process's stream places
    (MAX_STREAMS_PER_PROCESS: a thread under gthread) until it closes."""
    free_slot = live.take_stream_slot()
    try:
        records = runner_side.follow_commands(session_id, after, new_uow, bell, channel,
                                               on_queued=bell.ring)
        response = Response(ch.frames(records, current_app.config["STREAM_RETRY_MS"]),
                            mimetype="text/event-stream")
        response.call_on_close(free_slot)
    except BaseException:
        free_slot()
        raise
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"
    return response


@bp.post("/<session_id>/commands/<int:command_id>/ack")
@requires(RUNNER)
def ack(session_id, command_id):
    """POST .../commands/<id>/ack: the runner acted on the command (done or failed)."""
    body = load_body(schemas.command_ack_schema)
    if command_id > MAX_COMMAND_ID:  # no column holds it: no command has that id
        raise CommandNotFound(f"session {session_id} has no command {command_id}",
                              {"session_id": session_id, "command_id": command_id})
    command, _ = runner_side.ack_command(session_id, command_id, body["outcome"], body["reason"],
                                         db.writing(), caller=current_caller())
    return {"command": schemas.command_schema.dump(command)}


@bp.post("/<session_id>/permissions/<path:request_id>")
@requires(USER, cookie=True, csrf=True)
def answer(session_id, request_id):
    """POST .../permissions/<request_id>: allow or deny; the first answer wins."""
    body = load_body(schemas.permission_answer_schema)
    permission, _ = control.answer_permission(session_id, request_id, body["behavior"],
                                              body["message"], db.writing(),
                                              caller=current_caller(), settings=ch.settings())
    ch.ring(session_id)
    return {"permission": schemas.permission_schema.dump(permission)}


@bp.post("/<session_id>/interrupt")
@requires(USER, cookie=True, csrf=True)
def interrupt(session_id):
    """POST .../interrupt: stop the agent's current turn; the session stays open."""
    return _queue(session_id, "interrupt")


@bp.post("/<session_id>/stop")
@requires(USER, cookie=True, csrf=True)
def stop(session_id):
    """POST .../stop: end the agent; the session completes with who stopped it."""
    return _queue(session_id, "stop")


def _queue(session_id, kind):
    if read_whole_body():  # the body is optional; when given, an empty JSON object
        load_body(schemas.control_request_schema)
    queued = control.queue_control(session_id, kind, db.writing(), caller=current_caller(),
                                   settings=ch.settings())
    ch.ring(session_id)
    return {"command": schemas.command_schema.dump(queued.command),
            "runner_attached": queued.runner_attached}, 202


def _cursor():
    raw = request.headers.get("Last-Event-ID") or request.args.get("after")
    if raw in (None, ""):
        return 0
    try:
        cursor = int(raw)
    except ValueError:
        raise InvalidEventId("the cursor must be a command id", {"cursor": raw}) from None
    if not 0 <= cursor <= MAX_COMMAND_ID:
        raise InvalidEventId("the cursor is out of range", {"cursor": cursor})
    return cursor


def _wait():
    """`?wait=` seconds, 0 by default, at most COMMAND_WAIT_MAX_SECONDS."""
    limit = current_app.config["COMMAND_WAIT_MAX_SECONDS"]
    raw = request.args.get("wait", "0")
    try:
        wait = float(raw)
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= limit:
        raise ApiError(422, "invalid_wait", f"wait must be a number of seconds from 0 to {limit}",
                       {"wait": raw, "limit": limit})
    return wait
