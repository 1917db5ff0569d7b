"""Runner-facing endpoints: thin views over app.services.ingest.

Each takes a runner token, and only for sessions assigned to its machine.
"""
from flask import Blueprint
from flask import current_app

from app import db
from app import schemas
from app.auth import current_caller
from app.auth import requires
from app.core.records import Chunk
from app.ingest.limits import check_chunk_count
from app.ingest.limits import check_line_lengths
from app.request_args import load_body
from app.services import ingest as service
from app.services.access import RUNNER
from app.services.quotas import DayQuotas
from app.streaming import live

bp = Blueprint("ingest", __name__, url_prefix="/api/remote/sessions")


@bp.post("/<session_id>/output")
@requires(RUNNER)
def output(session_id):
    """POST /api/remote/sessions/<id>/output: buffer runner chunks, transcribe their lines."""
    batch = load_body(schemas.output_batch_schema, check=check_chunk_count)
    chunks = [Chunk(c["data"], c["stream"], c["seq"]) for c in batch["chunks"]]
    check_line_lengths(chunks)
    receipt = service.ingest_output(
        session_id,
        chunks,
        db.writing(),
        retention_seconds=current_app.config["OUTPUT_RETENTION_SECONDS"],
        caller=current_caller(),
        max_output_bytes=current_app.config["MAX_SESSION_OUTPUT_BYTES"],
        usage_reports=batch["usage"],
        token_lifetime_seconds=current_app.config["WRITE_TOKEN_LIFETIME_SECONDS"],
        tool_result_max_bytes=current_app.config["TOOL_RESULT_MAX_BYTES"],
        permission_timeout_seconds=current_app.config["PERMISSION_TIMEOUT_SECONDS"],
        day_quotas=DayQuotas(output_bytes=current_app.config["MAX_OUTPUT_BYTES_PER_USER_PER_DAY"]),
    )
    live.moved(session_id)
    return schemas.ingest_receipt_schema.dump(receipt)


@bp.post("/<session_id>/complete")
@requires(RUNNER)
def complete(session_id):
    """POST /api/remote/sessions/<id>/complete: flush the open turn and close the session."""
    body = load_body(schemas.complete_schema)
    session = service.complete_session(
        session_id, body["exit_code"], db.writing(), caller=current_caller(),
        token_grace_seconds=current_app.config["SESSION_TOKEN_GRACE_SECONDS"],
        reason=body["reason"],
        tool_result_max_bytes=current_app.config["TOOL_RESULT_MAX_BYTES"])
    live.moved(session_id)
    return {"session": schemas.session_summary_schema.dump(session)}


@bp.post("/<session_id>/usage")
@requires(RUNNER)
def usage(session_id):
    """POST /api/remote/sessions/<id>/usage: count a usage report, once per report_id."""
    report = load_body(schemas.usage_report_schema)
    counted, session = service.record_usage(session_id, report, db.writing(),
                                            caller=current_caller())
    return {"counted": counted, "session": schemas.session_summary_schema.dump(session)}


@bp.post("/<session_id>/usage-reports")
@requires(RUNNER)
def usage_reports(session_id):
    """POST /api/remote/sessions/<id>/usage-reports: several usage reports at once."""
    body = load_body(schemas.usage_reports_schema)
    counted, session = service.record_usage_reports(session_id, body["reports"], db.writing(),
                                                    caller=current_caller())
    return {"counted": counted, "session": schemas.session_summary_schema.dump(session)}
