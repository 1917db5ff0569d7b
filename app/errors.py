"""One JSON error envelope for the whole API: {"error": {code, message, details}}.

A browser (its Accept ranks HTML first) that meets a werkzeug error, an unknown path
say, gets the viewer's error page with the same status instead."""
from flask import current_app
from flask import jsonify
from flask import render_template
from flask import request
from marshmallow import ValidationError
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from app.core import errors as service_errors
from app.security_headers import html_security_headers

# The status of every service error; a subclass not listed gets its nearest
# ancestor's (tests/unit/test_errors_table.py holds every class to a row here).
SERVICE_STATUS = {
    service_errors.ServiceError: 400,
    service_errors.SessionNotFound: 404,
    service_errors.SessionClosed: 409,
    service_errors.SeqConflict: 409,
    service_errors.InvalidCursor: 422,
    service_errors.InvalidEventId: 400,
    service_errors.InvalidQuery: 422,
    service_errors.SearchTimeout: 503,
    service_errors.UnknownProvider: 422,
    service_errors.InvalidMachine: 422,
    service_errors.InvalidTokenName: 422,
    service_errors.NotPermitted: 403,
    service_errors.MigrationError: 500,
    service_errors.TooManyStreams: 429,
    service_errors.QuotaExceeded: 429,
    service_errors.SessionOutputLimit: 413,
    service_errors.InputTooLarge: 413,
    service_errors.NotSupported: 409,
    service_errors.AlreadyResolved: 409,
    service_errors.PermissionNotFound: 404,
    service_errors.CommandNotFound: 404,
}
# Headers of a werkzeug error that describe its HTML body, not the error itself.
BODY_HEADERS = frozenset({"content-type", "content-length"})
# What a client is told to wait before retrying when the database stayed locked.
BUSY_RETRY_AFTER_SECONDS = 1


class ApiError(Exception):
    """An error raised by a view with its status, code and details."""

    def __init__(self, status, code, message, details=None, headers=None):
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details or {}
        self.headers = headers or {}


def error_response(status, code, message, details=None):
    """The envelope as a (response, status) pair."""
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return jsonify(body), status


def prefers_html():
    """True when the client ranks HTML above JSON (a browser's Accept does; curl's `*/*`,
    a missing Accept or an API client's `application/json` do not)."""
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html"


def html_error(status, message):
    """The viewer's error page, with the API's status and the HTML pages' headers."""
    response = current_app.make_response(
        (render_template("ui/error.html", status=status, message=message), status))
    return html_security_headers(response)


def service_status(err):
    """The HTTP status of a service error, found by walking its class's MRO."""
    for cls in type(err).__mro__:
        if cls in SERVICE_STATUS:
            return SERVICE_STATUS[cls]
    return 400


def is_database_busy(err):
    """True for an OperationalError that says the (SQLite) database stayed locked."""
    return "database is locked" in str(getattr(err, "orig", None) or err)


def init_app(app):
    """Register the handlers that turn every failure into the JSON envelope."""

    @app.errorhandler(ApiError)
    def on_api_error(err):
        """A view's own error: its status, code, details and headers as given."""
        response, status = error_response(err.status, err.code, err.message, err.details)
        response.headers.update(err.headers)
        return response, status

    @app.errorhandler(ValidationError)
    def on_validation_error(err):
        """A body that failed its schema: 422 naming the bad fields."""
        return error_response(422, "validation_error", "the request body is invalid",
                              {"fields": err.messages})

    @app.errorhandler(service_errors.ServiceError)
    def on_service_error(err):
        """A named service failure (or a subclass of one), mapped to its status."""
        response, status = error_response(service_status(err), err.code, err.message, err.details)
        if getattr(err, "retry_after", None) is not None:
            response.headers["Retry-After"] = str(err.retry_after)
        return response, status

    @app.errorhandler(HTTPException)
    def on_http_error(err):
        """A werkzeug error (404, 405, 413...), keeping its headers (e.g. Allow): the
        envelope, or the HTML error page for a browser."""
        code = (err.name or "error").lower().replace(" ", "_")
        if prefers_html():
            response, status = html_error(err.code, err.description or err.name), err.code
        else:
            response, status = error_response(err.code, code, err.description or err.name)
        for name, value in err.get_headers():
            if name.lower() not in BODY_HEADERS:
                response.headers[name] = value
        return response, status

    @app.errorhandler(Exception)
    def on_unexpected(err):
        """Anything else: logged with its traceback, answered with a bare 500."""
        app.logger.error("unhandled error", exc_info=err)
        return error_response(500, "internal_error", "the server failed to handle the request")

    @app.errorhandler(OperationalError)
    def on_operational_error(err):
        """A database that stayed locked is 503 with Retry-After; anything else is a 500."""
        if not is_database_busy(err):
            return on_unexpected(err)
        app.logger.warning("database busy: %s", err)
        response, status = error_response(503, "database_busy",
                                          "the database is busy; retry shortly")
        response.headers["Retry-After"] = str(BUSY_RETRY_AFTER_SECONDS)
        return response, status
