"""Headers every response carries (issue: hold up against a hostile tenant, item 6).

nosniff and same-origin referrers everywhere; no-store on everything that holds or
describes transcript content (API, exports, streams, viewer pages, errors), so only the
viewer's static assets may be cached; HSTS only when the deployment is behind https."""
import pytest

from app.db import writing
from app.security_headers import HSTS_MAX_AGE_SECONDS
from app.services import tokens
from tests import claude_lines as cl
from tests.api import bearer

SESSIONS = "/api/remote/sessions"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False}


@pytest.fixture
def keys(app, client):
    with app.app_context():
        runner = tokens.issue("runner", "m1", writing())[1]
        user = tokens.issue("user", "alice", writing())[1]
    response = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice", "machine": "m1"},
                           headers=bearer(runner))
    assert response.status_code == 201, response.get_json()
    sid = response.get_json()["session"]["session_id"]
    lines = [cl.assistant(cl.text("the secret plan")), cl.result()]
    chunks = [{"seq": i, "data": line} for i, line in enumerate(lines)]
    assert client.post(f"{SESSIONS}/{sid}/output", json={"chunks": chunks},
                       headers=bearer(runner)).status_code == 200
    return {"runner": runner, "user": user, "sid": sid}


def transcript_requests(sid):
    """(method, path, body, expected status) of responses that carry or describe a transcript."""
    yield "GET", f"{SESSIONS}/{sid}", None, 200
    yield "GET", f"{SESSIONS}/{sid}/messages", None, 200
    yield "GET", f"{SESSIONS}/{sid}/export?format=json", None, 200
    yield "GET", f"{SESSIONS}/{sid}/export?format=markdown", None, 200
    yield "GET", f"{SESSIONS}/search?q=secret", None, 200
    yield "GET", SESSIONS, None, 200
    yield "GET", f"/sessions/{sid}", None, 200
    yield "GET", "/sessions", None, 200
    yield "GET", f"{SESSIONS}/nope", None, 404
    yield "GET", f"{SESSIONS}/{sid}/messages?after=garbage", None, 422


def test_transcript_responses_are_never_cached_nor_sniffed(client, keys):
    for method, path, body, status in transcript_requests(keys["sid"]):
        response = client.open(path, method=method, json=body, headers=bearer(keys["user"]))
        assert response.status_code == status, (path, response.status_code)
        assert response.headers["Cache-Control"] == "no-store", path
        assert response.headers["X-Content-Type-Options"] == "nosniff", path
        assert response.headers["Referrer-Policy"] == "same-origin", path
        assert "Strict-Transport-Security" not in response.headers, path


@pytest.mark.parametrize("route", ["stream", "events"])
def test_live_streams_are_never_cached(client, keys, route):
    response = client.get(f"{SESSIONS}/{keys['sid']}/{route}?after=0", headers=bearer(keys["user"]),
                          buffered=False)
    try:
        assert response.status_code == 200
        assert response.mimetype == "text/event-stream"
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    finally:
        response.close()


def test_writes_and_refusals_carry_the_headers_too(client, keys):
    refused = client.post(SESSIONS, json={"session_type": "agent"})  # no token
    accepted = client.post(f"{SESSIONS}/{keys['sid']}/complete", json={"exit_code": 0},
                           headers=bearer(keys["runner"]))
    for response in (refused, accepted):
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert refused.status_code == 401 and accepted.status_code == 200


def test_static_assets_may_be_cached_but_not_sniffed(client):
    response = client.get("/ui/static/viewer.js")
    assert response.status_code == 200
    assert "no-store" not in response.headers.get("Cache-Control", "")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    response.close()


def test_hsts_only_when_behind_https(app, client):
    assert "Strict-Transport-Security" not in client.get("/login").headers
    app.config["BEHIND_HTTPS"] = True
    for path in ("/login", f"{SESSIONS}/nope", "/ui/static/viewer.js"):
        response = client.get(path)
        assert response.headers["Strict-Transport-Security"] == f"max-age={HSTS_MAX_AGE_SECONDS}", path
        response.close()
