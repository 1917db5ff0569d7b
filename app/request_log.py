"""App logging: one handler on the `app` logger (services log under `app.services.*`,
so their records reach it too), each line tagged with the request's id.

The id comes from the caller's `X-Request-ID` when it is a short token (a proxy or a
runner may set one to follow a request across systems), else it is made here; the
response echoes it, so a client can quote it when reporting a failure.
"""
import logging
import re
import uuid

from flask import g
from flask import has_request_context
from flask import request
from flask.logging import default_handler
from flask.logging import wsgi_errors_stream

HEADER = "X-Request-ID"
# Kept as given only when it is safe in a log line and a header: no spaces or controls.
ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")
LOG_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"


class RequestIdFilter(logging.Filter):
    """Give every record the id of the request it was logged in ("-" outside one)."""

    def filter(self, record):
        record.request_id = g.get("request_id", "-") if has_request_context() else "-"
        return True


class AppLogHandler(logging.StreamHandler):
    """turnlog's handler: the WSGI server's error stream (gunicorn's error log), or stderr."""

    def __init__(self):
        super().__init__(wsgi_errors_stream)
        self.setFormatter(logging.Formatter(LOG_FORMAT))
        self.addFilter(RequestIdFilter())


def init_app(app):
    """Configure `app.logger` (once per process: it is shared) and tag every request."""
    logger = app.logger
    logger.setLevel(app.config["LOG_LEVEL"])
    logger.removeHandler(default_handler)
    if not any(isinstance(handler, AppLogHandler) for handler in logger.handlers):
        logger.addHandler(AppLogHandler())
    app.before_request(take_request_id)
    app.after_request(echo_request_id)


def take_request_id():
    given = request.headers.get(HEADER, "")
    g.request_id = given if ACCEPTED_ID.fullmatch(given) else uuid.uuid4().hex


def echo_request_id(response):
    response.headers[HEADER] = g.get("request_id") or uuid.uuid4().hex
    return response
