"""Reading a request: the JSON body through its schema, and the `limit` argument."""
import json

from flask import current_app
from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from app.errors import ApiError


def load_body(schema, *, check=None):
    """The request's JSON body, validated by `schema` (422 when it is not).

    The body is read first, whatever its content type, so that a request over
    MAX_CONTENT_LENGTH gets a 413 rather than a 422, chunked or not. `check(body)`,
    if given, looks at the decoded object before the schema spends time on it.
    """
    body = _json_object(read_whole_body())
    if check is not None:
        check(body)
    return schema.load(body)


def _json_object(data):
    """`data` decoded as the JSON object a body must be, or 422 `invalid_json` saying
    what is wrong: the content type (with the header to send), where the parse failed
    (line, column, character position), or which JSON type came instead of an object."""
    content_type = request.content_type
    if not request.is_json:
        raise ApiError(422, "invalid_json",
                       "the request body must be a JSON object sent with"
                       " Content-Type: application/json"
                       f" (this request's is {content_type or 'missing'})",
                       {"content_type": content_type,
                        "hint": "send the header Content-Type: application/json"})
    try:
        body = json.loads(data)
    except json.JSONDecodeError as err:
        raise ApiError(422, "invalid_json",
                       f"the request body is not valid JSON: {err.msg} at line {err.lineno}"
                       f" column {err.colno} (character {err.pos})",
                       {"content_type": content_type, "line": err.lineno,
                        "column": err.colno, "position": err.pos}) from None
    except UnicodeDecodeError as err:
        raise ApiError(422, "invalid_json",
                       f"the request body is not UTF-8 text: byte {err.start} cannot be decoded",
                       {"content_type": content_type, "position": err.start}) from None
    except RecursionError:  # nested deeper than the json module can follow
        raise ApiError(422, "invalid_json", "the request body is nested too deeply to read",
                       {"content_type": content_type}) from None
    if not isinstance(body, dict):
        raise ApiError(422, "invalid_json",
                       f"the request body must be a JSON object, not {_json_type(body)}",
                       {"content_type": content_type, "got": _json_type(body)})
    return body


def _json_type(value):
    """The JSON name of a decoded value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"


def read_whole_body():
    """The raw body, or 413 when it is longer than MAX_CONTENT_LENGTH.

    werkzeug refuses a Content-Length over the limit at once, but a chunked body
    (no Content-Length) is only cut off at the limit, and the cut JSON would then
    read as malformed: one more byte from the server's stream tells the two apart.
    """
    data = request.get_data()
    limit = request.max_content_length
    if request.content_length is None and limit is not None and len(data) >= limit:
        if request.environ["wsgi.input"].read(1):
            raise RequestEntityTooLarge()
    return data


def page_limit(maximum=None):
    """The `limit` query argument, defaulted and bounded by configuration (or by
    `maximum`, for a list whose items are bigger)."""
    maximum = min(maximum or current_app.config["MAX_PAGE_SIZE"], current_app.config["MAX_PAGE_SIZE"])
    default = min(current_app.config["DEFAULT_PAGE_SIZE"], maximum)
    raw = request.args.get("limit", default)
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise ApiError(422, "invalid_limit", "limit must be an integer", {"limit": raw}) from None
    if not 1 <= limit <= maximum:
        raise ApiError(422, "invalid_limit", f"limit must be between 1 and {maximum}",
                       {"limit": limit})
    return limit
