"""turnlog's HTTP API from Python: one `Client` per server and token.

Every method returns the decoded JSON of a success and raises `ApiError` for the
server's error envelope (status, code, message, details, Retry-After) or
`Unreachable` when no answer came at all. The --server URL is checked before anything is
sent, and a failure that means the URL is wrong (TLS to plain HTTP, an HTML 404 where
the API should be, turnlog's own 404 for a route it does not have under a --server with a
path) is `Misconfigured`, an ApiError retrying cannot fix.
"""
import email.utils
import time
from urllib.parse import quote
from urllib.parse import urlsplit

import requests
import urllib3

from app.client import feed
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable

API = "/api/remote/sessions"
TIMEOUT_SECONDS = 30


class Client:
    """Calls on one turnlog server with one token (runner, session write token or user)."""

    def __init__(self, server, token=None, timeout=TIMEOUT_SECONDS):
        self.server = checked_server(server)
        self.token = token
        self.timeout = timeout
        self.http = requests.Session()
        if token:
            self.http.headers["Authorization"] = f"Bearer {token}"

    def with_token(self, token):
        """A client for the same server with another token (a session's write token)."""
        return Client(self.server, token, self.timeout)

    def open_session(self, session_type="agent", *, provider=None, user_id=None, machine=None,
                     context=None, command=None, prompt=None):
        """Open a session: the whole answer, `{"session": {...}, "write_token": ...}`.
        `command` (its arguments, secrets redacted) and `prompt` say what runs in it."""
        body = {"session_type": session_type}
        for name, value in (("provider", provider), ("user_id", user_id),
                            ("machine", machine), ("context", context),
                            ("command", command), ("prompt", prompt)):
            if value is not None:
                body[name] = value
        return self.call("POST", API, body)

    def post_output(self, session_id, chunks, usage=()):
        """Post `[{"seq", "stream", "data"}, ...]`, with the usage reports (dicts of
        report_id, input_tokens, output_tokens, requests) those lines carry, counted in
        the same transaction: `{"accepted", "duplicates", "last_event_index",
        "usage_counted"}`."""
        body = {"chunks": list(chunks)}
        if usage:
            body["usage"] = [{"requests": 1, **report} for report in usage]
        return self.call("POST", f"{API}/{session_id}/output", body)

    def complete(self, session_id, exit_code=None, reason=None):
        """Mark the session completed (exit code 0 or None) or failed; the session.
        `reason` says why the agent never ran (it could not be started)."""
        body = {} if exit_code is None else {"exit_code": exit_code}
        if reason is not None:
            body["reason"] = reason
        return self.call("POST", f"{API}/{session_id}/complete", body)["session"]

    def report_usage(self, session_id, report_id, input_tokens=0, output_tokens=0, requests=1):
        """Add a usage report once per `report_id`; True when it was counted now."""
        body = {"report_id": report_id, "input_tokens": input_tokens,
                "output_tokens": output_tokens, "requests": requests}
        return self.call("POST", f"{API}/{session_id}/usage", body)["counted"]

    def report_usage_many(self, session_id, reports):
        """Add several usage reports (dicts of report_id, input_tokens, output_tokens,
        requests) in one request; a list of True (counted now) or False (a repeat)."""
        body = {"reports": [{"requests": 1, **report} for report in reports]}
        return self.call("POST", f"{API}/{session_id}/usage-reports", body)["counted"]

    def attach_runner(self, session_id, controls):
        """Say a runner drives the session and what it offers (docs/control.md):
        `{"runner": {"attached", "controls", "seen_at"}}`."""
        return self.call("POST", f"{API}/{session_id}/runner", {"controls": list(controls)})

    def ack_command(self, session_id, command_id, outcome="done", reason=None):
        """The runner acted on command `command_id` (`done`) or could not (`failed`)."""
        body = {"outcome": outcome} | ({"reason": reason} if reason else {})
        return self.call("POST", f"{API}/{session_id}/commands/{int(command_id)}/ack", body)

    def send_message(self, session_id, content, client_message_id):
        """Queue a prompt for the session's agent; the same `client_message_id` again finds
        the input queued before (a retry never duplicates): `{"input", "runner_attached"}`."""
        body = {"content": content, "client_message_id": client_message_id}
        return self.call("POST", f"{API}/{session_id}/messages", body)

    def answer_permission(self, session_id, request_id, behavior, message=None):
        """Allow or deny a pending permission request (the first answer wins):
        `{"permission"}`."""
        body = {"behavior": behavior} | ({"message": message} if message is not None else {})
        return self.call("POST", f"{API}/{session_id}/permissions/{quote(request_id, safe='')}",
                         body)

    def interrupt(self, session_id):
        """Stop the agent's current turn: `{"command", "runner_attached"}`."""
        return self.call("POST", f"{API}/{session_id}/interrupt", {})

    def stop(self, session_id):
        """End the agent; the session completes: `{"command", "runner_attached"}`."""
        return self.call("POST", f"{API}/{session_id}/stop", {})

    def get_session(self, session_id):
        """The session with its first page of messages."""
        return self.call("GET", f"{API}/{session_id}")["session"]

    def messages(self, session_id, page_size=100):
        """Every transcript message in write order, a page per request."""
        after = None
        while True:
            params = {"limit": page_size} | ({"after": after} if after else {})
            page = self.call("GET", f"{API}/{session_id}/messages", params=params)
            yield from page["messages"]
            after = page["next_cursor"]
            if not after:
                return

    def follow(self, session_id, *, after=None, raw=False, stop_at_end=True, on_retry=None):
        """The session's live events (`/events`, or `/stream` when `raw` or the server has no
        `/events`), resumed with Last-Event-ID after a dropped connection; see app.client.feed."""
        return feed.follow(self, session_id, after=after, raw=raw, stop_at_end=stop_at_end,
                           on_retry=on_retry)

    def viewer_url(self, session_id):
        return f"{self.server}/sessions/{session_id}"

    def call(self, method, path, body=None, params=None):
        """One request; the decoded JSON body of a 2xx answer."""
        try:
            response = self.http.request(method, self.server + path, json=body, params=params,
                                         timeout=self.timeout)
        except requests.RequestException as err:
            raise self._failure(err, f"{method} {path}") from err
        if response.status_code >= 400:
            raise error_of(response, self.server)
        return response.json()

    def open_stream(self, path, last_event_id=None, read_timeout=None):
        """A streaming GET of an SSE endpoint; errors as for `call`."""
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        try:
            response = self.http.get(self.server + path, headers=headers, stream=True,
                                     timeout=(self.timeout, read_timeout))
        except requests.RequestException as err:
            raise self._failure(err, f"GET {path}") from err
        if response.status_code >= 400:
            with response:
                raise error_of(response, self.server)
        return response

    def _failure(self, err, request):
        """Misconfigured when the failure means the URL is wrong, else Unreachable."""
        wrong = misconfigured_by(err, self.server)
        if wrong is not None:
            return wrong
        return Unreachable(f"cannot reach {self.server}: {unreachable_reason(err, self.timeout)}"
                           f" ({request})", reached(err))


def reached(err):
    """Whether a request that got no answer may have reached the server: it was sent and
    the server timed out, dropped the connection or died on it. False when no connection
    was made (refused, no route, a connect timeout): the server was not there."""
    if isinstance(err, requests.ConnectTimeout):
        return False
    if isinstance(err, requests.ConnectionError):
        cause = err.args[0] if err.args else None
        return not (isinstance(cause, urllib3.exceptions.MaxRetryError)
                    and isinstance(cause.reason, urllib3.exceptions.NewConnectionError))
    return isinstance(err, (requests.Timeout, requests.exceptions.ChunkedEncodingError))


def error_of(response, server=None):
    """The ApiError of an error answer (a proxy's HTML page too); Misconfigured when the
    answer says the URL is wrong (no_api_at, misconfigured_answer)."""
    try:
        envelope = response.json()["error"]
        code, message, details = envelope["code"], envelope["message"], envelope.get("details")
    except (ValueError, KeyError, TypeError):
        wrong = misconfigured_answer(response, server) if server else None
        if wrong is not None:
            return wrong
        code, message, details = f"http_{response.status_code}", response.reason or "", None
    if server and response.status_code == 404 and code == "not_found" and _path_of(server):
        return no_api_at(server, response)  # turnlog's own 404: no such route under this path
    return ApiError(response.status_code, code, message, details,
                    retry_after(response.headers.get("Retry-After")))


def retry_after(value):
    """Seconds of a Retry-After header (a number or an HTTP date), None without one."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# --- the --server URL, and what a failure says of it ---------------------------------

# A path the user may have copied from an API URL or a viewer URL.
API_PATHS = ("/api", "/sessions")
# What OpenSSL says when the other side answers TLS with plain HTTP.
PLAIN_HTTP_SIGNS = ("wrong version number", "wrong_version_number", "record layer failure",
                    "packet length too long", "http request")


def checked_server(url):
    """`url` without a trailing slash, or Misconfigured naming the fix: it needs an
    http:// or https:// scheme and a host, and is the server's root (not an API path)."""
    text = (url or "").strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        if "://" in text:
            raise Misconfigured(f"--server {text}: the scheme must be http:// or https://")
        raise Misconfigured(f"--server {text} has no scheme: use http://{text.lstrip('/')}"
                            f" (or https://{text.lstrip('/')} behind TLS)")
    path = parts.path.rstrip("/")
    for api_path in API_PATHS:
        if path.endswith(api_path) or f"{api_path}/" in path:
            root = f"{parts.scheme}://{parts.netloc}{path[:path.find(api_path)]}"
            raise Misconfigured(f"--server {text} is a path into the API: give the server's"
                                f" root URL, {root}")
    if parts.query or parts.fragment:
        raise Misconfigured(f"--server {text}: give the server's root URL, without ? or #")
    return text.rstrip("/")


def misconfigured_by(err, server):
    """The Misconfigured a request failure means, or None when it is only a failure to
    reach the server (worth retrying)."""
    if not isinstance(err, requests.exceptions.SSLError):
        return None
    text = str(err).lower()
    plain = server.replace("https://", "http://", 1)
    if any(sign in text for sign in PLAIN_HTTP_SIGNS):
        return Misconfigured(f"{server} answers plain HTTP, not TLS: use {plain}")
    if "certificate" in text:
        return Misconfigured(f"{server}: its TLS certificate is not trusted ({_ssl_reason(err)});"
                             " give its CA's file in REQUESTS_CA_BUNDLE")
    return Misconfigured(f"{server}: TLS failed ({_ssl_reason(err)})")


def misconfigured_answer(response, server):
    """The Misconfigured an error answer that is not turnlog's means, or None: an HTML
    404 (no turnlog API at that path), or a TLS port that was sent plain HTTP."""
    body = response.text[:2000] if response.content else ""
    if response.status_code == 400 and "HTTPS port" in body:
        secure = server.replace("http://", "https://", 1)
        return Misconfigured(f"{server} expects HTTPS: use {secure}", 400)
    if response.status_code == 404:
        return no_api_at(server, response)
    return None


def no_api_at(server, response):
    """Misconfigured for a 404 where the API should be: an HTML one (no turnlog there), or
    turnlog's own `not_found` under a --server with a path (it names no route turnlog
    has: the server's root is wanted). turnlog's `not_found` at a server's root is left an
    ApiError: that is an older server without the route (app.client.feed falls back)."""
    parts = urlsplit(server)
    if _path_of(server):
        return Misconfigured(f"no turnlog API at {server}: give the server's root URL, e.g."
                             f" {parts.scheme}://{parts.netloc}", 404)
    return Misconfigured(f"no turnlog API at {server} (it answered 404 to"
                         f" {urlsplit(response.url).path}): is --server the server's root"
                         " URL?", 404)


def _path_of(server):
    return urlsplit(server).path.strip("/")


def unreachable_reason(err, timeout):
    """A few words for why a request got no answer."""
    if isinstance(err, requests.ConnectTimeout):
        return "connection timed out"
    if isinstance(err, requests.ReadTimeout):
        return f"no answer within {timeout:g} s"
    if isinstance(err, requests.exceptions.ChunkedEncodingError):
        return "the answer was cut off"
    cause = err.args[0] if err.args else None
    reason = getattr(cause, "reason", cause)
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "the host name does not resolve"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return "connection refused" if "refused" in str(reason).lower() else "cannot connect"
    if isinstance(reason, urllib3.exceptions.ProtocolError) or "aborted" in str(err).lower():
        return "the connection was dropped"
    return type(err).__name__


def _ssl_reason(err):
    text = str(err)
    start = text.rfind("[SSL")
    return text[start:text.find("]", start) + 1] if start >= 0 else text[:200]
