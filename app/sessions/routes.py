"""Read and create sessions: thin views over app.services.sessions."""
import itertools
import json

from flask import Blueprint
from flask import Response
from flask import current_app
from flask import request

from app import db
from app import schemas
from app.auth import current_caller
from app.auth import requires
from app.control import channel
from app.errors import ApiError
from app.formats import exports
from app.formats.openai_format import to_openai_messages
from app.request_args import load_body
from app.request_args import page_limit
from app.services import control
from app.services import evidence
from app.services import search
from app.services import sessions as service
from app.services.access import RUNNER
from app.services.access import USER

bp = Blueprint("sessions", __name__, url_prefix="/api/remote/sessions")


@bp.post("")
@requires(USER, RUNNER)
def create():
    """POST /api/remote/sessions: open a running session (201 with its summary)."""
    data = load_body(schemas.session_create_schema, check=check_context_size)
    config = current_app.config
    quotas = service.OpenQuotas(per_token_per_minute=config["SESSIONS_PER_TOKEN_PER_MINUTE"],
                                open_per_user=config["MAX_OPEN_SESSIONS_PER_USER"],
                                per_user_per_day=config["MAX_SESSIONS_PER_USER_PER_DAY"])
    session = service.open_session(data, db.writing(), caller=current_caller(), quotas=quotas,
                                   token_lifetime_seconds=config["WRITE_TOKEN_LIFETIME_SECONDS"])
    body = {"session": schemas.session_summary_schema.dump(session)}
    if session.write_token is not None:  # a runner's: valid for this session only, shown once
        body["write_token"] = session.write_token
    return body, 201


def check_context_size(body):
    """A `context` of at most MAX_CONTEXT_BYTES as compact JSON (checked before the
    schema walks it): every list and viewer page of the session would carry it."""
    context = body.get("context")
    if context is None:
        return
    size = len(json.dumps(context, separators=(",", ":")))  # ASCII: non-ASCII is escaped, as stored
    limit = current_app.config["MAX_CONTEXT_BYTES"]
    if size > limit:
        raise ApiError(413, "context_too_large",
                       f"context may hold at most {limit} bytes of JSON; keep large data elsewhere",
                       {"bytes": size, "limit": limit})


@bp.get("")
@requires(USER, cookie=True)
def index():
    """GET /api/remote/sessions: session summaries, newest first, one page per cursor."""
    page = service.list_sessions(db.reading(), cursor=request.args.get("cursor"),
                                 limit=page_limit(current_app.config["SESSIONS_PAGE_MAX"]),
                                 caller=current_caller())
    service.mark_stale(page.items, stale_seconds=current_app.config["RUNNER_STALE_SECONDS"])
    return {
        "sessions": schemas.session_list_item_schema.dump(page.items, many=True),
        "next_cursor": page.next_cursor,
    }


@bp.get("/search")
@requires(USER, cookie=True)
def search_messages():
    """GET /api/remote/sessions/search?q=: transcript rows whose visible text holds every
    word of `q`, in the sessions the caller may read, newest first, with snippets."""
    page = search.search_messages(request.args.get("q"), db.reading(), limit=page_limit(),
                                  before=request.args.get("before"), caller=current_caller(),
                                  budget_seconds=current_app.config["SEARCH_TIMEOUT_SECONDS"])
    return {
        "results": schemas.search_hit_schema.dump(page.items, many=True),
        "next_cursor": page.next_cursor,
    }


@bp.get("/<session_id>")
@requires(USER, cookie=True)
def show(session_id):
    """GET /api/remote/sessions/<id>: the session with its transcript, up to
    SESSION_MESSAGES_MAX messages (then `messages_truncated` and `next_cursor`)."""
    def read():
        return service.get_session(session_id, db.reading(), caller=current_caller(),
                                   max_messages=current_app.config["SESSION_MESSAGES_MAX"],
                                   max_bytes=current_app.config["PAGE_MAX_BYTES"])

    session = read()
    # Permissions past their time are denied here too (fail-closed), the reader
    # being allowed to see the session: no runner needs to be waiting for them to expire.
    if control.expire_due(session_id, db.detached_units_of_work(), settings=channel.settings()):
        channel.ring(session_id)
        session = read()
    control.describe(session, db.reading(), settings=channel.settings())
    service.mark_stale([session], stale_seconds=current_app.config["RUNNER_STALE_SECONDS"])
    return {"session": schemas.session_schema.dump(session)}


@bp.get("/<session_id>/messages")
@requires(USER, cookie=True)
def messages(session_id):
    """GET /api/remote/sessions/<id>/messages: one page of the transcript.

    Paged by `after` (the last message id seen) and `limit`; with `format=openai`
    the whole transcript comes back as OpenAI chat messages instead. With
    `include=tool_results`, each message carries its turn's tool calls with their
    results, and `tool_turns` the turns among them that wrote no row.
    """
    fmt = request.args.get("format", "turnlog")
    with_tools = _include_tool_results()
    if fmt == "openai":
        service.get_session_summary(session_id, db.reading(), caller=current_caller())
        parts = exports.json_parts({}, "messages", map(to_openai_messages, _message_pages(session_id)))
        return Response(parts, mimetype="application/json")
    if fmt != "turnlog":
        raise ApiError(422, "invalid_format", "format must be turnlog or openai", {"format": fmt})
    if with_tools:
        return _messages_with_tools(session_id)
    page = service.list_messages(session_id, db.reading(), after=request.args.get("after"),
                                 limit=page_limit(), caller=current_caller(),
                                 max_bytes=current_app.config["PAGE_MAX_BYTES"])
    return {
        "messages": schemas.message_schema.dump(page.items, many=True),
        "next_cursor": page.next_cursor,
    }


INCLUDES = ("tool_results",)


def _include_tool_results():
    """Whether `include` (a comma-separated list) asks for tool results; 422 for a
    name it does not know."""
    names = [name.strip() for name in request.args.get("include", "").split(",") if name.strip()]
    unknown = [name for name in names if name not in INCLUDES]
    if unknown:
        raise ApiError(422, "invalid_include", f"include may name {', '.join(INCLUDES)} only",
                       {"include": request.args.get("include"), "unknown": unknown})
    if names and request.args.get("format", "turnlog") != "turnlog":
        raise ApiError(422, "invalid_include", "include=tool_results goes with format=turnlog",
                       {"include": request.args.get("include"), "format": request.args.get("format")})
    return bool(names)


def _messages_with_tools(session_id):
    """A page of messages, each with its `tool_results`, and the `tool_turns` among them."""
    page, tools = evidence.list_messages_with_tools(
        session_id, db.reading(), after=request.args.get("after"), limit=page_limit(),
        caller=current_caller(), max_bytes=current_app.config["PAGE_MAX_BYTES"])
    messages = schemas.message_schema.dump(page.items, many=True)
    for dumped, message in zip(messages, page.items):
        dumped["tool_results"] = schemas.tool_result_schema.dump(
            tools.by_message.get(message.id, []), many=True)
    return {
        "messages": messages,
        "tool_turns": schemas.tool_turn_schema.dump(tools.tool_turns, many=True),
        "tool_results_truncated": tools.truncated,
        "next_cursor": page.next_cursor,
    }


def _message_pages(session_id):
    """The session's transcript a byte-bounded page at a time, each page read in a
    transaction of its own: a whole-transcript answer streams, however long it is.
    Everything it needs of the request is taken now, so the stream needs no request
    context (a client that stops reading leaves none pushed)."""
    config = current_app.config
    return service.iter_message_pages(session_id, db.detached_units_of_work(),
                                      limit=config["MAX_PAGE_SIZE"], max_bytes=config["PAGE_MAX_BYTES"])


@bp.get("/<session_id>/evidence")
@requires(USER, cookie=True)
def evidence_page(session_id):
    """GET /api/remote/sessions/<id>/evidence: one page of the shell commands the agent
    ran, in the order they ran, paged by `after` (the last item's id) and `limit`."""
    page = evidence.list_evidence(session_id, db.reading(), after=request.args.get("after"),
                                  limit=page_limit(), caller=current_caller(),
                                  max_bytes=current_app.config["PAGE_MAX_BYTES"])
    return {
        "evidence": schemas.evidence_schema.dump(page.items, many=True),
        "next_cursor": page.next_cursor,
    }


@bp.get("/<session_id>/export")
@requires(USER, cookie=True)
def export(session_id):
    """GET /api/remote/sessions/<id>/export?format=openai|markdown|json: the session as a
    file to download (Content-Disposition: attachment)."""
    fmt = request.args.get("format", "json")
    if fmt not in exports.FORMATS:
        raise ApiError(422, "invalid_format", "format must be openai, markdown or json",
                       {"format": fmt})
    session = service.get_session_summary(session_id, db.reading(), caller=current_caller(),
                                          with_open_turn=True)
    pages = _message_pages(session_id)
    if fmt == "markdown":
        parts, mimetype = exports.markdown_parts(session, pages), "text/markdown"
    elif fmt == "openai":
        parts, mimetype = exports.json_list_parts(map(to_openai_messages, pages)), "application/json"
    else:
        control.describe(session, db.reading(), settings=channel.settings())  # as GET shows it
        dumped = (schemas.message_schema.dump(page, many=True) for page in pages)
        parts = itertools.chain(['{"session": '],
                                exports.json_parts(schemas.session_schema.dump(session), "messages", dumped),
                                ["}"])
        mimetype = "application/json"
    response = Response(parts, mimetype=mimetype)
    response.headers["Content-Disposition"] = (
        f'attachment; filename="{exports.export_filename(session, fmt)}"'
    )
    return response
