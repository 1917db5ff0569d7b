"""A CSRF token for the viewer's forms (/login, /logout).

SameSite=Lax already keeps the cookie off another site's POST; the token also
covers a browser that ignores SameSite, and a login forced onto a visitor
(login CSRF), where no cookie of ours exists yet. It lives in the signed session
cookie and in a hidden `csrf_token` field; a POST must bring both, equal.
"""
import secrets

from flask import request
from flask import session

FIELD = "csrf_token"
# The viewer's scripts send the token in this header with the API's writes that
# take the cookie (POST .../messages, permissions, interrupt, stop).
HEADER = "X-CSRF-Token"
SESSION_KEY = "csrf"


def csrf_token():
    """This visitor's token (made on first use); templates put it in a hidden field."""
    if SESSION_KEY not in session:
        session[SESSION_KEY] = secrets.token_urlsafe(32)
    return session[SESSION_KEY]


def csrf_ok():
    """True when the posted form carries this visitor's token."""
    expected = session.get(SESSION_KEY)
    sent = request.form.get(FIELD, "")
    return bool(expected) and secrets.compare_digest(sent.encode(), expected.encode())


def csrf_header_ok():
    """True when the request's X-CSRF-Token header carries this visitor's token."""
    expected = session.get(SESSION_KEY)
    sent = request.headers.get(HEADER, "")
    return bool(expected) and secrets.compare_digest(sent.encode(), expected.encode())
