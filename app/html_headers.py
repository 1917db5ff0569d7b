"""Security headers of the HTML pages (viewer, sign-in)."""


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


def html_security_headers(response):
    """CSP (no inline script), no MIME sniffing, no framing, no referrer leaks."""
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response
