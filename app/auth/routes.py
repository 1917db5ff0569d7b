"""GET/POST /login and POST /logout: the viewer trades a user token for a cookie once.

The cookie is Flask's signed session cookie holding a random sign-in key, never the
token; the database keeps the key's hash (viewer_sessions), so signing out ends the
sign-in for every copy of the cookie at once. It is HttpOnly, SameSite=Lax and (by
default) Secure. Every request re-checks the sign-in and its token. Both forms carry
a CSRF token (app/auth/csrf.py).
"""
from flask import Blueprint
from flask import current_app
from flask import redirect
from flask import render_template
from flask import request
from flask import session
from flask import url_for

from app import db
from app.auth.csrf import csrf_ok
from app.auth.csrf import csrf_token
from app.auth.guard import COOKIE_KEY
from app.security_headers import html_security_headers
from app.services import tokens
from app.services.access import USER

bp = Blueprint("auth", __name__, template_folder="templates")
bp.after_request(html_security_headers)


@bp.get("/login")
def login_form():
    return render_template("auth/login.html", next=_safe_next(request.args.get("next")))


@bp.post("/login")
def login():
    """Sign in with a user token; back to `next` (a path on this site) on success."""
    secret = (request.form.get("token") or "").strip()
    target = _safe_next(request.form.get("next"))
    if not csrf_ok():
        return _refused(target)
    caller = tokens.caller_for_secret(secret, db.reading()) if secret else None
    if caller is None or caller.kind != USER:
        message = ("That is a runner token; sign in with a user token."
                   if caller is not None else "Unknown or revoked token.")
        return render_template("auth/login.html", next=target, error=message), 401
    key = tokens.sign_in(caller.token_id, db.writing(),
                         lifetime_seconds=current_app.config["VIEWER_SESSION_SECONDS"])
    session.clear()  # a fresh session (and CSRF token): nothing from before carries over
    session[COOKIE_KEY] = key
    csrf_token()  # in the cookie set now, so the pages' sign-out forms do not change it again
    return redirect(target)


@bp.post("/logout")
def logout():
    """End the sign-in in the database, then forget the cookie."""
    if not csrf_ok():
        return _refused(url_for("ui.sessions"))
    if COOKIE_KEY in session:
        tokens.sign_out(session[COOKIE_KEY], db.writing())
    session.clear()
    return redirect(url_for("auth.login_form"))


def _refused(target):
    """A form posted without this visitor's CSRF token: 400, and a fresh form to retry."""
    message = "The form had expired or came from another page; please try again."
    return render_template("auth/login.html", next=target, error=message), 400


def _safe_next(target):
    """Only a path on this site: `//host` or `https://host` would send the visitor away.

    Browsers drop tabs and line breaks from a URL and read a backslash as a slash, so
    `/<TAB>/host` and `/\\host` are `//host` to them: any control character, space or
    backslash makes the target unsafe, whatever it spells.
    """
    if (not target or not target.startswith("/") or target.startswith("//")
            or any(char == "\\" or char.isspace() or ord(char) < 32 or ord(char) == 127
                   for char in target)):
        return url_for("ui.sessions")
    return target
