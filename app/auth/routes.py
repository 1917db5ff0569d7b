"""GET/POST /login and POST /logout: the viewer trades a user token for a cookie once.

The cookie is Flask's signed session cookie holding the token's id, never the
token; it is HttpOnly, SameSite=Lax and (by default) Secure. Every request
re-checks that the token is not revoked.
"""
from flask import Blueprint
from flask import redirect
from flask import render_template
from flask import request
from flask import session
from flask import url_for

from app import db
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
    caller = tokens.caller_for_secret(secret, db.reading()) if secret else None
    if caller is None or caller.kind != USER:
        message = ("That is a runner token; sign in with a user token."
                   if caller is not None else "Unknown or revoked token.")
        return render_template("auth/login.html", next=target, error=message), 401
    session.clear()  # a fresh session: nothing from before the sign-in carries over
    session[COOKIE_KEY] = caller.token_id
    return redirect(target)


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("auth.login_form"))


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
