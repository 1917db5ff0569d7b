"""Send input to a live session: a thin view over app.services.inputs."""
from flask import Blueprint
from flask import current_app

from app import db
from app import schemas
from app.auth import current_caller
from app.auth import requires
from app.control import channel
from app.request_args import load_body
from app.services import inputs as service
from app.services.access import USER

bp = Blueprint("inputs", __name__, url_prefix="/api/remote/sessions")


@bp.post("/<session_id>/messages")
@requires(USER, cookie=True, csrf=True)
def send(session_id):
    """POST /api/remote/sessions/<id>/messages: queue a prompt for the session's agent
    (202), or find the one queued under the same client_message_id before (200)."""
    data = load_body(schemas.input_send_schema)
    sent = service.send_input(session_id, data["content"], data["client_message_id"],
                              db.writing(), caller=current_caller(),
                              max_bytes=current_app.config["MAX_INPUT_BYTES"],
                              settings=channel.settings())
    if sent.created:
        channel.ring(session_id)
    return ({"input": schemas.input_schema.dump(sent.input), "runner_attached": sent.runner_attached},
            202 if sent.created else 200)
