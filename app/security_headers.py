"""Security headers: some on every response, a strict policy on the HTML pages.

Every response is told not to be sniffed into another type and not to leak its
URL in a Referer to other origins. Everything but the viewer's static assets
carries transcript content or answers about it (API, exports, streams, viewer
pages, errors), so none of it may be kept by a browser or proxy cache. Behind
https the deployment may also pin browsers to https (HSTS)."""
from flask import current_app
from flask import request

# HTML pages (viewer, sign-in) allow scripts and styles from this origin only.
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])
# One year, the span browsers' preload lists ask for.
HSTS_MAX_AGE_SECONDS = 365 * 24 * 3600


def init_app(app):
    app.after_request(common_security_headers)


def common_security_headers(response):
    """nosniff, same-origin referrers and no-store everywhere but static assets; HSTS
    when the app is configured as served over https (BEHIND_HTTPS)."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    if not is_static_asset():
        response.headers["Cache-Control"] = "no-store"
    if current_app.config["BEHIND_HTTPS"]:
        response.headers["Strict-Transport-Security"] = f"max-age={HSTS_MAX_AGE_SECONDS}"
    return response


def is_static_asset():
    """True for the viewer's scripts and styles, the only responses a cache may keep."""
    endpoint = request.endpoint or ""
    return endpoint == "static" or endpoint.endswith(".static")


def html_security_headers(response):
    """CSP (no inline script), no MIME sniffing, no framing, no referrer leaks."""
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response
