"""The --server URL, checked before anything is sent, and the failures of a request
said plainly: which ones mean the URL is wrong (Misconfigured: fix it, retrying cannot)
and what "cannot reach" means this time (refused, no such host, timed out, dropped)."""
from urllib.parse import urlsplit

import requests
import urllib3

from app.client.errors import Misconfigured

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
        return Misconfigured(f"no turnlog API at {server} (it answered 404 to"
                             f" {urlsplit(response.url).path}): is --server the server's root"
                             " URL?", 404)
    return None


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
