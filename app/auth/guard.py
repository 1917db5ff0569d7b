"""Who is calling: the `requires` decorator every API and viewer view wears.

A request proves itself with `Authorization: Bearer <token>`, or, on the read
views that allow it, with the viewer's session cookie (set by /login). Writes
never accept the cookie, so a page on another site cannot post as the viewer.
"""
import functools
import math

from flask import current_app
from flask import g
from flask import redirect
from flask import request
from flask import session
from flask import url_for

from app import db
from app.auth.csrf import csrf_header_ok
from app.auth.csrf import csrf_token
from app.errors import ApiError
from app.services import tokens
from app.services.access import OPEN
from app.services.rate_limit import RateLimiter

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="turnlog"'}
# The session cookie holds a sign-in key (its hash is a viewer_sessions row), never a token.
COOKIE_KEY = "viewer"


def init_app(app):
    """One rate limiter per process; a loud warning when authentication is off."""
    app.extensions["turnlog_rate_limiter"] = RateLimiter(
        app.config["RATE_LIMIT_REQUESTS"], app.config["RATE_LIMIT_WINDOW_SECONDS"])
    app.jinja_env.globals["csrf_token"] = csrf_token
    if app.config["AUTH_DISABLED"]:
        app.logger.warning("AUTH_DISABLED is set: anyone who can reach this server may read"
                           " and write every session. Use it for local demos only.")


def requires(*kinds, cookie=False, on_missing=None, csrf=False):
    """Let the view run only for a caller holding a token of one of `kinds`.

    `cookie` also accepts the viewer's session cookie. `on_missing()`, if given,
    answers a request that presented no credentials (the viewer redirects to /login).
    `csrf` (a write that takes the cookie) wants, from a caller signed in by cookie,
    the viewer's CSRF token in the `X-CSRF-Token` header: 400 `csrf_failed` without.
    """
    def decorate(view):
        @functools.wraps(view)
        def guarded(*args, **kwargs):
            if current_app.config["AUTH_DISABLED"]:
                g.caller = OPEN
            else:
                caller = _authenticate(cookie)
                if caller is None and on_missing is not None:
                    return on_missing()
                g.caller = _admit_and_throttle(caller, kinds)
                if csrf and caller.viewer_key_hash is not None and not csrf_header_ok():
                    raise ApiError(400, "csrf_failed", "a write by the viewer's cookie needs its"
                                   " CSRF token in the X-CSRF-Token header", {})
            return view(*args, **kwargs)
        guarded.required_token_kinds = kinds  # read by the tests that check every route
        return guarded
    return decorate


def login_redirect():
    """The viewer's answer to a visitor without a valid cookie: the sign-in page."""
    return redirect(url_for("auth.login_form", next=request.full_path.rstrip("?")))


def current_caller():
    """The caller `requires` admitted for this request."""
    return g.caller


def _authenticate(cookie):
    """The Caller of the request's credentials; None when it presented none.

    Credentials that are presented but wrong are a 401 at once, never a fallback.
    """
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, secret = header.partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise ApiError(401, "invalid_authorization",
                           "use the header `Authorization: Bearer <token>`", headers=CHALLENGE)
        caller = tokens.caller_for_secret(secret, db.reading())
        if caller is None:
            raise ApiError(401, "invalid_token", "the token is unknown, revoked or expired",
                           headers=CHALLENGE)
        return caller
    if cookie and COOKIE_KEY in session:
        caller = tokens.caller_for_viewer(session[COOKIE_KEY], db.reading())
        if caller is None:  # signed out, expired or revoked: the cookie is worth nothing now
            session.clear()
        return caller
    return None


def _admit_and_throttle(caller, kinds):
    """The caller, if a token of an accepted kind came and its rate allows this request."""
    if caller is None:
        raise ApiError(401, "missing_token", "this endpoint needs `Authorization: Bearer <token>`",
                       headers=CHALLENGE)
    if caller.kind not in kinds:
        raise ApiError(403, "wrong_token_kind",
                       f"this endpoint takes a {' or '.join(kinds)} token, not a {caller.kind} token",
                       {"token_kind": caller.kind, "accepted": list(kinds)})
    allowed, wait = current_app.extensions["turnlog_rate_limiter"].acquire(caller.token_id)
    if not allowed:
        raise ApiError(429, "rate_limited", "too many requests for this token; slow down",
                       {"retry_after_seconds": round(wait, 3)},
                       headers={"Retry-After": str(max(1, math.ceil(wait)))})
    return caller
