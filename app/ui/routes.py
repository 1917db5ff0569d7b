"""GET /sessions and GET /sessions/<id>: HTML views over app.services.sessions.

Every response of this blueprint carries a Content-Security-Policy that allows
scripts and styles from this origin only (app.security_headers.html_security_headers), so no
inline script or handler can run, whatever an agent printed. Each view takes a
user token, normally the session cookie set by /login.
"""
from flask import Blueprint
from flask import current_app
from flask import jsonify
from flask import redirect
from flask import render_template
from flask import request
from flask import session as cookie_session
from flask import url_for

from app import db
from app.auth import current_caller
from app.auth import login_redirect
from app.auth import requires
from app.auth.csrf import csrf_token
from app.auth.guard import COOKIE_KEY
from app.control import channel
from app.core import errors as service_errors
from app.core.liveness import shown_status
from app.errors import service_status
from app.request_args import load_body
from app.schemas import MarkdownRenderSchema
from app.security_headers import html_security_headers
from app.services import control
from app.services import evidence as evidence_service
from app.services import inputs as inputs_service
from app.services import search as search_service
from app.services import sessions as service
from app.services.access import USER
from app.ui import controls as control_view
from app.ui import markdown
from app.ui.evidence_panel import evidence_panel
from app.ui.figures import TOKEN_SOURCES
from app.ui.figures import header_figures
from app.ui.figures import heading
from app.ui.figures import token_figure
from app.ui.titles import session_title
from app.ui.transcript import bubbles
from app.ui.transcript import open_turn_bubble
from app.ui.transcript import thinking_view

bp = Blueprint("ui", __name__, template_folder="templates", static_folder="static",
               static_url_path="/ui/static")

SESSIONS_PER_PAGE = 50
EVIDENCE_SHOWN = 200  # commands in the page's evidence panel; the API pages through the rest


bp.after_request(html_security_headers)
bp.add_app_template_global(shown_status, "shown_status")


@bp.errorhandler(service_errors.ServiceError)
def service_error(err):
    """An unknown session or a bad cursor as a small HTML page, with the API's status."""
    status = service_status(err)
    return render_template("ui/error.html", status=status, message=err.message), status


@bp.get("/")
def home():
    """The site's root is the session list (which sends a visitor to sign in first)."""
    return redirect(url_for("ui.sessions"))


@bp.get("/sessions")
@requires(USER, cookie=True, on_missing=login_redirect)
def sessions():
    """Sessions, newest first, one page per cursor."""
    page = service.list_sessions(db.reading(), cursor=request.args.get("cursor"),
                                 limit=SESSIONS_PER_PAGE, caller=current_caller(),
                                 with_openers=True)
    service.mark_stale(page.items, stale_seconds=current_app.config["RUNNER_STALE_SECONDS"])
    rows = [(s, session_title(s.context, s.messages, prompt=s.first_prompt, command=s.command),
             _tokens(s)) for s in page.items]
    return render_template("ui/sessions.html", rows=rows, next_cursor=page.next_cursor)


@bp.get("/search")
@requires(USER, cookie=True, on_missing=login_redirect)
def search():
    """Messages matching `?q=` in the caller's sessions, newest first, with snippets."""
    query = request.args.get("q", "")
    if not query.strip():
        return render_template("ui/search.html", query="", hits=None, next_cursor=None)
    page = search_service.search_messages(query, db.reading(), limit=SESSIONS_PER_PAGE,
                                          before=request.args.get("before"),
                                          caller=current_caller(),
                                          budget_seconds=current_app.config["SEARCH_TIMEOUT_SECONDS"])
    return render_template("ui/search.html", query=query, hits=page.items,
                           next_cursor=page.next_cursor)


@bp.get("/sessions/<session_id>")
@requires(USER, cookie=True, on_missing=login_redirect)
def session(session_id):
    """One session's transcript, followed live by static/viewer.js, with its controls
    (static/control.js): the composer, pending permissions, Interrupt and Stop."""
    found = service.get_session_tail(session_id, db.reading(), caller=current_caller(),
                                     max_messages=current_app.config["VIEWER_PAGE_MESSAGES"],
                                     max_bytes=current_app.config["VIEWER_PAGE_BYTES"],
                                     with_openers=True)
    # (after the read, which checked the caller: a resolution written now is after the
    # events cursor, so /events still tells the page)
    _expire_permissions(session_id)
    last_id = found.messages[-1].id if found.messages else 0
    # Titled by its opening rows, as in the list (the page may hold its newest rows only).
    title = session_title(found.context, found.openers, prompt=found.first_prompt,
                          command=found.command)
    service.mark_stale([found], stale_seconds=current_app.config["RUNNER_STALE_SECONDS"])
    # the tool-only turns from the first message shown on (from the start when it is
    # the session's first) to the end
    tools = _tools(session_id, found.messages,
                   found.messages[0].id if found.messages_truncated and found.messages else 0, None)
    return render_template(
        "ui/session.html", agent_session=found, figures=header_figures(found),
        bubbles=bubbles(found.messages, tools),
        evidence=_evidence_panel(session_id),
        evidence_url=url_for("sessions.evidence_page", session_id=session_id),
        evidence_panel_url=url_for("ui.session_evidence", session_id=session_id),
        title=title,
        open_turn=open_turn_bubble(found.open_turn),
        last_message_id=last_id,
        # The transcript, the open turn and the event counter are read in one
        # transaction, so following the feed from here misses nothing and replays nothing.
        events_url=url_for("streaming.events", session_id=session_id,
                           after=found.next_event_index - 1),
        bubbles_url=url_for("ui.session_bubbles", session_id=session_id),
        # Long transcripts open at their newest page; older pages load on demand.
        older_url=(url_for("ui.session_bubbles", session_id=session_id, before=found.messages_prev_cursor)
                   if found.messages_truncated else None),
        open_turn_url=url_for("ui.session_open_turn", session_id=session_id),
        counters_url=url_for("ui.session_counters", session_id=session_id),
        render_max_chars=markdown.RENDER_MAX_CHARS,
        **_control_panel(found, title.text or found.session_id))


def _expire_permissions(session_id):
    """Deny the requests whose time ran out (fail-closed), as the API's session GET
    does: a reader's page must not offer to answer them."""
    if control.expire_due(session_id, db.detached_units_of_work(), settings=channel.settings()):
        channel.ring(session_id)


def _described(session):
    """`session` with its pending permissions, controls and stopped_by filled in; and
    its inputs not yet applied."""
    control.describe(session, db.reading(), settings=channel.settings())
    inputs = inputs_service.pending_inputs(session.session_id, db.reading(),
                                           caller=current_caller())
    return session, inputs


def _control_panel(found, page_title):
    """What session.html's control panel needs: its state, cards, sent bubbles and URLs."""
    _, inputs = _described(found)
    sid = found.session_id
    controls = found.controls or {}
    return {
        "session_id": sid,
        "page_title": page_title,
        "buttons": control_view.buttons(controls),
        **_answers(controls),
        "control_note": control_view.unavailable_note(controls, found.stopped_by),
        "cards": [control_view.permission_card(p) for p in found.pending_permissions],
        "outgoing": control_view.outgoing(sid, inputs),
        # Only a viewer signed in by cookie needs the token (a bearer token is no cookie).
        "csrf": csrf_token() if cookie_session.get(COOKIE_KEY) else "",
        "controls_url": url_for("ui.session_controls", session_id=sid),
        "permissions_url": url_for("ui.session_permissions", session_id=sid),
        "messages_url": url_for("inputs.send", session_id=sid),
        "interrupt_url": url_for("control.interrupt", session_id=sid),
        "stop_url": url_for("control.stop", session_id=sid),
    }


def _answers(controls):
    """Whether the cards' Allow and Deny are on, and why not."""
    return {"answers_enabled": bool(controls.get("permissions")),
            "answers_reason": (controls.get("reasons") or {}).get("permissions", "")}


@bp.get("/sessions/<session_id>/controls")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_controls(session_id):
    """The page's controls as JSON (app.ui.controls.control_state), read again by the
    page while something it sent is on its way, and every few seconds (a runner may
    come or go without a word on /events)."""
    found = service.get_session_summary(session_id, db.reading(), caller=current_caller())
    _expire_permissions(session_id)
    response = jsonify(control_view.control_state(*_described(found)))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/sessions/<session_id>/permissions")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_permissions(session_id):
    """The pending permissions' cards as an HTML fragment; the page asks for it when
    /events announces a request, and adds the cards it lacks."""
    found = service.get_session_summary(session_id, db.reading(), caller=current_caller())
    control.describe(found, db.reading(), settings=channel.settings())
    response = current_app.make_response(render_template(
        "ui/_permissions.html", session_id=session_id,
        cards=[control_view.permission_card(p) for p in found.pending_permissions],
        **_answers(found.controls or {})))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/sessions/<session_id>/open-turn")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_open_turn(session_id):
    """The provisional bubble of the turn still accumulating, as an HTML fragment ("" if
    none); the page asks for it when a live event names a block it does not hold."""
    found = service.get_session_summary(session_id, db.reading(), caller=current_caller(),
                                        with_open_turn=True)
    response = current_app.make_response(render_template(
        "ui/_open_turn.html", open_turn=open_turn_bubble(found.open_turn)))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/sessions/<session_id>/evidence")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_evidence(session_id):
    """The evidence panel as an HTML fragment ("" while no command ran); the page reads
    it again when a turn closes."""
    response = current_app.make_response(render_template(
        "ui/_evidence.html", evidence=_evidence_panel(session_id),
        evidence_url=url_for("sessions.evidence_page", session_id=session_id)))
    response.headers["Cache-Control"] = "no-store"
    return response


def _evidence_panel(session_id):
    items, rows, more = evidence_service.evidence_with_rows(
        session_id, db.reading(), limit=EVIDENCE_SHOWN, caller=current_caller())
    return evidence_panel(items, rows, more)


@bp.get("/sessions/<session_id>/failure")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_failure(session_id):
    """Why a failed session failed (exit code, reason, last stderr lines) as an HTML
    fragment ("" unless it failed); the page asks for it when the session ends failed."""
    found = service.get_session_summary(session_id, db.reading(), caller=current_caller())
    response = current_app.make_response(render_template("ui/_failure.html", agent_session=found))
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/sessions/<session_id>/counters")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_counters(session_id):
    """The header's figures and heading, read again by the page while it follows the
    session: when a turn closes or usage arrives, and at most every few seconds while
    events come (the title, model and cwd arrive with rows, "Updated" with any write)."""
    found = service.get_session_summary(session_id, db.reading(), caller=current_caller(),
                                        with_openers=True)
    service.mark_stale([found], stale_seconds=current_app.config["RUNNER_STALE_SECONDS"])
    title = session_title(found.context, found.openers, prompt=found.first_prompt,
                          command=found.command)
    response = jsonify({"status": shown_status(found), **header_figures(found),
                        **heading(found, title)})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/sessions/<session_id>/bubbles")
@requires(USER, cookie=True, on_missing=login_redirect)
def session_bubbles(session_id):
    """The bubbles of the messages after `?after=<message id>`, as an HTML fragment.

    `X-Last-Message-Id` is the last message read (bubbles with nothing to show are
    left out, so it may be newer than the last bubble); `X-Next-Cursor` is set when
    more messages follow. With `?before=<message id>` instead, the page of messages
    just before it (the viewer's "older messages"), `X-Prev-Cursor` set when still
    older ones exist.
    """
    if request.args.get("before") is not None:
        return _older_bubbles(session_id)
    page, tools = evidence_service.list_messages_with_tools(
        session_id, db.reading(), after=request.args.get("after"),
        limit=current_app.config["MAX_PAGE_SIZE"], caller=current_caller(),
        max_bytes=current_app.config["VIEWER_PAGE_BYTES"])
    response = current_app.make_response(
        render_template("ui/_bubbles.html", bubbles=bubbles(page.items, tools)))
    if page.items:
        response.headers["X-Last-Message-Id"] = str(page.items[-1].id)
    if page.next_cursor:
        response.headers["X-Next-Cursor"] = page.next_cursor
    response.headers["Cache-Control"] = "no-store"
    return response


def _older_bubbles(session_id):
    page = service.list_messages_before(session_id, db.reading(), before=request.args["before"],
                                        limit=current_app.config["VIEWER_PAGE_MESSAGES"],
                                        caller=current_caller(),
                                        max_bytes=current_app.config["VIEWER_PAGE_BYTES"])
    # the tool-only turns before `before`, from this page's first message on (from the
    # start when no older page is left)
    first = page.items[0].id if page.next_cursor and page.items else 0
    tools = _tools(session_id, page.items, first, int(request.args["before"] or 0) or None)
    response = current_app.make_response(
        render_template("ui/_bubbles.html", bubbles=bubbles(page.items, tools)))
    if page.next_cursor:
        response.headers["X-Prev-Cursor"] = page.next_cursor
        response.headers["X-Prev-Url"] = url_for("ui.session_bubbles", session_id=session_id,
                                                 before=page.next_cursor)
    response.headers["Cache-Control"] = "no-store"
    return response


def _tools(session_id, messages, after, before):
    """The tool results of a page of the viewer's messages (evidence.tools_of_messages)."""
    return evidence_service.tools_of_messages(session_id, db.reading(), messages, after=after,
                                              before=before, caller=current_caller(),
                                              max_bytes=current_app.config["VIEWER_PAGE_BYTES"])


@bp.post("/ui/markdown")
@requires(USER, cookie=True, csrf=True)
def render_markdown():
    """`{"text", "kind"}` rendered as the bubbles render it: `{"html"}` (kind "text") or
    `{"title", "html"}` (kind "thinking", app.ui.transcript.thinking_view). The page
    asks for it while a block of the open turn streams, so the live bubble and the row
    that replaces it share one renderer."""
    body = load_body(MarkdownRenderSchema())
    text = body["text"]
    if body["kind"] == "thinking":
        title, html = thinking_view(text)
        answer = {"title": title, "html": str(html)}
    else:
        answer = {"html": str(markdown.render(text))}
    response = jsonify(answer)
    response.headers["Cache-Control"] = "no-store"
    return response


def _tokens(session):
    """(the one token figure, what it counts) of a row of the list."""
    tokens, source = token_figure(session)
    return tokens, TOKEN_SOURCES[source]


@bp.app_template_filter("snippet")
def snippet(text):
    """A search snippet (matches between ** marks) as safe HTML, bold where it matched."""
    return markdown.inline(text)


@bp.app_template_filter("when")
def when(iso):
    """`2026-12-02T16:49:41.846043Z` as `2026-12-02 16:49:41 UTC`."""
    if not iso:
        return ""
    return iso[:19].replace("T", " ") + " UTC"
