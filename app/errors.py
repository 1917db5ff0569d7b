"""One JSON error envelope for the whole API: {"error": {code, message, details}}."""
from flask import jsonify
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from app.services import errors as service_errors
from app.services.sessions import InvalidCursor

SERVICE_STATUS = {
    service_errors.SessionNotFound: 404,
    service_errors.SessionClosed: 409,
    InvalidCursor: 422,
}


class ApiError(Exception):
    """An error raised by a view with its status, code and details."""

    def __init__(self, status, code, message, details=None):
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details or {}


def error_response(status, code, message, details=None):
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return jsonify(body), status


def init_app(app):
    @app.errorhandler(ApiError)
    def on_api_error(err):
        return error_response(err.status, err.code, err.message, err.details)

    @app.errorhandler(ValidationError)
    def on_validation_error(err):
        return error_response(422, "validation_error", "the request body is invalid",
                              {"fields": err.messages})

    @app.errorhandler(service_errors.ServiceError)
    def on_service_error(err):
        return error_response(SERVICE_STATUS.get(type(err), 400), err.code, err.message,
                              err.details)

    @app.errorhandler(HTTPException)
    def on_http_error(err):
        code = (err.name or "error").lower().replace(" ", "_")
        return error_response(err.code, code, err.description or err.name)

    @app.errorhandler(Exception)
    def on_unexpected(err):
        app.logger.exception("unhandled error")
        return error_response(500, "internal_error", "the server failed to handle the request")
