"""Who may write and read, through the test client with authentication on.

Runner tokens write only the sessions of their machine; user tokens read only
their own sessions (an admin reads all); another user's session is a 404.
"""
import re
import time

import pytest
from flask.sessions import SecureCookieSessionInterface

from app.db import reading
from app.db import writing
from app.services import tokens
from tests import claude_lines as cl
from tests.api import bearer

SESSIONS = "/api/remote/sessions"
READ_ROUTES = ("", "/messages", "/evidence", "/export", "/messages?format=openai")
WRITE_BODIES = {
    "output": {"chunks": [{"seq": 0, "data": "x"}]},
    "complete": {"exit_code": 0},
    "usage": {"report_id": "r1", "input_tokens": 1},
    "usage-reports": {"reports": [{"report_id": "r2", "input_tokens": 1}]},
}


CONTROL_BODIES = {
    "messages": {"content": "x", "client_message_id": "c"},
    "permissions/R1": {"behavior": "allow"},
    "interrupt": {},
    "stop": {},
    "runner": {"controls": ["send"]},
    "commands/1/ack": {"outcome": "done"},
}


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False}


@pytest.fixture
def token(app):
    """token(kind, name, admin=False) -> a new bearer token's secret."""
    def issue(kind, name, admin=False):
        with app.app_context():
            return tokens.issue(kind, name, writing(), is_admin=admin)[1]
    return issue


@pytest.fixture
def world(client, token):
    """Two machines, two users, an admin, and a session of alice's on machine m1."""
    keys = {
        "m1": token("runner", "m1"), "m2": token("runner", "m2"),
        "alice": token("user", "alice"), "bob": token("user", "bob"),
        "admin": token("user", "root", admin=True),
    }
    response = client.post(SESSIONS, json={"session_type": "agent", "machine": "m1"},
                           headers=bearer(keys["alice"]))
    assert response.status_code == 201, response.get_json()
    keys["sid"] = response.get_json()["session"]["session_id"]
    return keys


def post_output(client, sid, key, lines, start=0):
    chunks = [{"seq": start + i, "data": line} for i, line in enumerate(lines)]
    return client.post(f"{SESSIONS}/{sid}/output", json={"chunks": chunks}, headers=bearer(key))


def test_auth_is_on_by_default():
    from app.config import Config
    assert Config.AUTH_DISABLED is False


def test_every_api_and_viewer_route_names_the_tokens_it_takes(app):
    open_endpoints = {"static", "ui.static", "ui.home", "auth.login_form", "auth.login", "auth.logout",
                      "api_docs.openapi"}
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if rule.endpoint in open_endpoints:
            continue
        assert getattr(view, "required_token_kinds", None), f"{rule.rule} has no token check"


def api_requests(sid):
    """(method, path, body) of every API route, against session `sid`."""
    yield "POST", SESSIONS, {"session_type": "agent"}
    yield "GET", SESSIONS, None
    for suffix in READ_ROUTES + ("/stream", "/events"):
        yield "GET", f"{SESSIONS}/{sid}{suffix}", None
    for name, body in WRITE_BODIES.items():
        yield "POST", f"{SESSIONS}/{sid}/{name}", body
    # the control channel (issue 30): a person's writes, then the runner's routes
    for name, body in CONTROL_BODIES.items():
        yield "POST", f"{SESSIONS}/{sid}/{name}", body
    yield "GET", f"{SESSIONS}/{sid}/commands", None


def test_every_api_route_without_a_token_is_401_with_a_challenge(client, world, rows):
    before = rows("SELECT COUNT(*) FROM agent_sessions")
    for method, path, body in api_requests(world["sid"]):
        response = client.open(path, method=method, json=body)
        assert response.status_code == 401, (method, path)
        assert response.get_json()["error"]["code"] == "missing_token"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert rows("SELECT COUNT(*) FROM agent_sessions") == before


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer    ", "tlu_x"])
def test_a_malformed_authorization_header_is_401(client, world, header):
    response = client.get(SESSIONS, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_authorization"


def test_an_unknown_token_is_401(client, world):
    response = client.get(SESSIONS, headers=bearer("tlu_not-a-real-token"))
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_token"


def test_runner_writes_the_sessions_of_its_machine(client, world, rows):
    sid = world["sid"]
    response = post_output(client, sid, world["m1"], [cl.assistant(cl.text("hi")), cl.result()])
    assert response.status_code == 200, response.get_json()
    usage = client.post(f"{SESSIONS}/{sid}/usage", json=WRITE_BODIES["usage"],
                        headers=bearer(world["m1"]))
    assert usage.status_code == 200
    done = client.post(f"{SESSIONS}/{sid}/complete", json={}, headers=bearer(world["m1"]))
    assert done.get_json()["session"]["status"] == "completed"
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?", sid) == [(2,)]


def test_runner_of_another_machine_is_refused_and_nothing_changes(client, world, rows):
    sid = world["sid"]
    kept = cl.assistant(cl.text("kept"))
    post_output(client, sid, world["m1"], [kept])
    snapshot = rows("SELECT message_count, request_count, next_event_index, status"
                    " FROM agent_sessions WHERE session_id = ?", sid)
    for name, body in WRITE_BODIES.items():
        response = client.post(f"{SESSIONS}/{sid}/{name}", json=body, headers=bearer(world["m2"]))
        assert response.status_code == 404, name
        assert response.get_json()["error"] == {
            "code": "session_not_found", "message": f"no session {sid}",
            "details": {"session_id": sid}}
    assert rows("SELECT message_count, request_count, next_event_index, status"
                " FROM agent_sessions WHERE session_id = ?", sid) == snapshot
    assert rows("SELECT payload FROM remote_runtime_outputs WHERE session_id = ?", sid) == [
        (kept,)]


def test_a_session_with_no_machine_takes_no_runner(client, world, token):
    response = client.post(SESSIONS, json={"session_type": "chat"}, headers=bearer(world["bob"]))
    sid = response.get_json()["session"]["session_id"]
    assert response.get_json()["session"]["machine"] is None
    refused = post_output(client, sid, world["m1"], ["x"])
    unknown = post_output(client, "no-such-session", world["m1"], ["x"])
    assert (refused.status_code, unknown.status_code) == (404, 404)
    error = refused.get_json()["error"]
    assert error == {"code": "session_not_found", "message": f"no session {sid}",
                     "details": {"session_id": sid}}
    assert unknown.get_json()["error"]["message"] == "no session no-such-session"


def test_a_runner_opens_sessions_on_its_own_machine_only(client, world):
    response = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice"},
                           headers=bearer(world["m2"]))
    assert response.status_code == 201
    assert response.get_json()["session"]["machine"] == "m2"
    assert response.get_json()["session"]["user_id"] == "alice"
    other = client.post(SESSIONS, json={"session_type": "agent", "machine": "m1"},
                        headers=bearer(world["m2"]))
    assert other.status_code == 403
    assert other.get_json()["error"]["code"] == "not_permitted"


def test_a_user_opens_sessions_for_themselves_only(client, world):
    own = client.post(SESSIONS, json={"session_type": "agent"}, headers=bearer(world["bob"]))
    assert own.get_json()["session"]["user_id"] == "bob"
    other = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice"},
                        headers=bearer(world["bob"]))
    assert other.status_code == 403
    by_admin = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice"},
                           headers=bearer(world["admin"]))
    assert by_admin.get_json()["session"]["user_id"] == "alice"


def test_tokens_of_the_wrong_kind_are_403(client, world):
    sid = world["sid"]
    response = client.get(f"{SESSIONS}/{sid}", headers=bearer(world["m1"]))
    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "wrong_token_kind"
    response = post_output(client, sid, world["alice"], ["x"])
    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "wrong_token_kind"


@pytest.mark.parametrize("suffix", READ_ROUTES + ("/stream", "/events"))
def test_another_users_session_is_404_on_every_read(client, world, suffix):
    response = client.get(f"{SESSIONS}/{world['sid']}{suffix}", headers=bearer(world["bob"]))
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"
    missing = client.get(f"{SESSIONS}/no-such-session{suffix}", headers=bearer(world["bob"]))
    assert missing.get_json() == {
        "error": {**response.get_json()["error"],
                  "message": "no session no-such-session",
                  "details": {"session_id": "no-such-session"}}}


@pytest.mark.parametrize("reader", ["alice", "admin"])
@pytest.mark.parametrize("suffix", READ_ROUTES)
def test_owner_and_admin_read_the_session(client, world, reader, suffix):
    response = client.get(f"{SESSIONS}/{world['sid']}{suffix}", headers=bearer(world[reader]))
    assert response.status_code == 200


def test_the_owner_streams_the_session(client, world):
    post_output(client, world["sid"], world["m1"], ["one line"])
    client.post(f"{SESSIONS}/{world['sid']}/complete", json={}, headers=bearer(world["m1"]))
    response = client.get(f"{SESSIONS}/{world['sid']}/stream", headers=bearer(world["alice"]))
    body = response.get_data(as_text=True)
    assert "one line" in body and "event: end" in body


def test_the_owner_follows_the_live_events_by_token_and_by_cookie(client, world):
    post_output(client, world["sid"], world["m1"], [cl.assistant(cl.text("hi")), cl.result()])
    client.post(f"{SESSIONS}/{world['sid']}/complete", json={}, headers=bearer(world["m1"]))
    by_token = client.get(f"{SESSIONS}/{world['sid']}/events", headers=bearer(world["alice"]))
    assert "event: turn.completed" in by_token.get_data(as_text=True)
    runner = client.get(f"{SESSIONS}/{world['sid']}/events", headers=bearer(world["m1"]))
    assert runner.status_code == 403
    sign_in(client, world["alice"])
    by_cookie = client.get(f"{SESSIONS}/{world['sid']}/events")
    assert by_cookie.get_data(as_text=True) == by_token.get_data(as_text=True)


def test_lists_hold_only_what_the_caller_may_read(client, world):
    client.post(SESSIONS, json={"session_type": "agent"}, headers=bearer(world["bob"]))

    def listed(key):
        response = client.get(SESSIONS, headers=bearer(key))
        return sorted(s["user_id"] for s in response.get_json()["sessions"])

    assert listed(world["alice"]) == ["alice"]
    assert listed(world["bob"]) == ["bob"]
    assert listed(world["admin"]) == ["alice", "bob"]


def test_a_revoked_token_stops_working_at_once(app, client, world):
    assert client.get(SESSIONS, headers=bearer(world["alice"])).status_code == 200
    with app.app_context():
        (record,) = [t for t in tokens.list_tokens(writing()) if t.name == "alice"]
        assert tokens.revoke(record.id, writing()) is True
        assert tokens.revoke(record.id, writing()) is False
    response = client.get(SESSIONS, headers=bearer(world["alice"]))
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_token"


def test_only_the_hash_of_a_token_is_stored(world, rows):
    stored = rows("SELECT token_hash FROM agent_tokens")
    assert len(stored) == 5
    secrets_ = [world[k] for k in ("m1", "m2", "alice", "bob", "admin")]
    assert {h for (h,) in stored} == {tokens.hash_token(s) for s in secrets_}
    assert not any(s in h for (h,) in stored for s in secrets_)


# The viewer: a user token once at /login, then an HttpOnly cookie.

def form_csrf(client, path="/login"):
    """The CSRF token the page at `path` puts in its forms (and in this client's cookie)."""
    page = client.get(path).get_data(as_text=True)
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match, f"no csrf_token field on {path}"
    return match.group(1)


def sign_in(client, secret, next_path="/sessions"):
    return client.post("/login", data={"token": secret, "next": next_path,
                                       "csrf_token": form_csrf(client)})


def sign_out(client):
    return client.post("/logout", data={"csrf_token": form_csrf(client, "/sessions")})


def test_the_viewer_sends_visitors_to_sign_in(client, world):
    response = client.get(f"/sessions/{world['sid']}")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/login?next=/sessions/{world['sid']}"
    page = client.get(response.headers["Location"])
    assert page.status_code == 200
    assert b'name="token"' in page.data
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_signing_in_sets_a_secure_httponly_cookie_without_the_token(client, world):
    response = sign_in(client, world["alice"], f"/sessions/{world['sid']}")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/sessions/{world['sid']}"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "Secure" in cookie and "SameSite=Lax" in cookie
    assert world["alice"] not in cookie
    assert client.get(f"/sessions/{world['sid']}").status_code == 200
    # The cookie also reads the API (the viewer's live stream and bubbles use it)...
    assert client.get(f"{SESSIONS}/{world['sid']}").status_code == 200
    assert client.get(f"/sessions/{world['sid']}/bubbles").status_code == 200
    # ...but never writes: a page on another site cannot post as the viewer.
    assert post_output_with_cookie(client, world["sid"]).status_code == 401


def post_output_with_cookie(client, sid):
    return client.post(f"{SESSIONS}/{sid}/output", json={"chunks": [{"data": "x"}]})


def test_the_viewer_shows_only_the_callers_sessions(client, world):
    sign_in(client, world["bob"])
    assert client.get(f"/sessions/{world['sid']}").status_code == 404
    assert world["sid"].encode() not in client.get("/sessions").data


@pytest.mark.parametrize("who", ["m1", None])
def test_sign_in_refuses_runner_and_unknown_tokens(client, world, who):
    response = sign_in(client, world[who] if who else "tlu_nonsense")
    assert response.status_code == 401
    assert b'role="alert"' in response.data
    assert "Set-Cookie" not in response.headers
    assert client.get("/sessions").status_code == 302


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil",
                                    "/\t/evil.example", "/\n/evil.example", "/\r//evil.example",
                                    " //evil.example", "/ /evil.example", "/\x00/evil.example"])
def test_sign_in_never_redirects_off_site(client, world, target):
    response = sign_in(client, world["alice"], target)
    assert response.headers["Location"] == "/sessions"


def test_a_revoked_token_ends_the_viewer_session(app, client, world):
    sign_in(client, world["alice"])
    assert client.get("/sessions").status_code == 200
    with app.app_context():
        (record,) = [t for t in tokens.list_tokens(writing()) if t.name == "alice"]
        tokens.revoke(record.id, writing())
    assert client.get("/sessions").status_code == 302
    assert client.get(f"{SESSIONS}/{world['sid']}").status_code == 401


def test_sign_out_ends_the_sign_in_for_every_copy_of_the_cookie(app, client, world, rows):
    sign_in(client, world["alice"])
    # On every page, the session page included (its session must not hide Flask's).
    for path in ("/sessions", f"/sessions/{world['sid']}", "/search?q=x", "/sessions/nope"):
        page = client.get(path).data
        assert b'<form class="signout" method="post" action="/logout">' in page
        assert b'name="csrf_token"' in page
    old_cookie = client.get_cookie("session").value
    assert rows("SELECT COUNT(*) FROM viewer_sessions WHERE revoked_at IS NULL") == [(1,)]

    response = sign_out(client)
    assert response.status_code == 302 and response.headers["Location"] == "/login"
    assert rows("SELECT COUNT(*) FROM viewer_sessions WHERE revoked_at IS NOT NULL") == [(1,)]
    # The cookie as it was before signing out, replayed by another client: signed out too.
    replay = app.test_client()
    replay.set_cookie("session", old_cookie)
    assert replay.get("/sessions").status_code == 302
    assert replay.get("/sessions").headers["Location"].startswith("/login")
    assert replay.get(SESSIONS).status_code == 401


def test_the_cookie_holds_a_sign_in_key_never_the_token_or_its_id(client, world, rows):
    sign_in(client, world["alice"])
    (key_hash,) = rows("SELECT key_hash FROM viewer_sessions")[0]
    with client.application.app_context():
        serializer = SecureCookieSessionInterface().get_signing_serializer(client.application)
        data = serializer.loads(client.get_cookie("session").value)
    assert tokens.hash_token(data["viewer"]) == key_hash
    assert world["alice"] not in str(data) and "token_id" not in data


@pytest.mark.parametrize("form", [{}, {"csrf_token": ""}, {"csrf_token": "forged"}])
def test_login_without_its_csrf_token_is_refused_with_400(client, world, rows, form):
    form_csrf(client)  # the visitor has a CSRF token; the post does not bring it
    response = client.post("/login", data={"token": world["alice"], "next": "/sessions", **form})
    assert response.status_code == 400
    assert b"please try again" in response.data and b'name="csrf_token"' in response.data
    assert rows("SELECT COUNT(*) FROM viewer_sessions") == [(0,)]
    assert client.get("/sessions").status_code == 302  # not signed in


def test_a_login_posted_with_no_cookie_at_all_is_refused(app, world):
    stranger = app.test_client()  # another site's form: no CSRF token of ours exists
    response = stranger.post("/login", data={"token": world["alice"], "csrf_token": "x"})
    assert response.status_code == 400


def test_logout_without_its_csrf_token_is_refused_and_keeps_the_sign_in(client, world, rows):
    sign_in(client, world["alice"])
    response = client.post("/logout")
    assert response.status_code == 400
    assert client.get("/sessions").status_code == 200
    assert rows("SELECT COUNT(*) FROM viewer_sessions WHERE revoked_at IS NULL") == [(1,)]


def test_an_expired_sign_in_asks_to_sign_in_again(client, world, rows):
    sign_in(client, world["alice"])
    assert client.get("/sessions").status_code == 200
    rows("UPDATE viewer_sessions SET expires_at = '2000-01-01T00:00:00.000000Z'")
    assert client.get("/sessions").status_code == 302


class TestRevokingDuringAStream:
    @pytest.fixture
    def app_config(self):
        return {"AUTH_DISABLED": False, "STREAM_HEARTBEAT_SECONDS": 0.2, "STREAM_AUTH_CHECK_SECONDS": 0.2,
                "STREAM_POLL_SECONDS": 0.05, "STREAM_MAX_SECONDS": 10}

    def test_a_revoked_token_ends_an_open_stream_without_end(self, app, client, world):
        post_output(client, world["sid"], world["m1"], ["one line"])
        response = client.get(f"{SESSIONS}/{world['sid']}/stream",
                              headers=bearer(world["alice"]), buffered=False)
        frames = iter(response.response)
        seen = b""
        while b"one line" not in seen:
            seen += next(frames)
        with app.app_context():
            token_id = tokens.caller_for_secret(world["alice"], reading()).token_id
            assert tokens.revoke(token_id, writing())
        started = time.monotonic()
        rest = b"".join(frames)  # ends by itself, long before STREAM_MAX_SECONDS
        assert time.monotonic() - started < 2
        assert b"event: end" not in rest
        response.close()
        again = client.get(f"{SESSIONS}/{world['sid']}/stream", headers=bearer(world["alice"]))
        assert again.status_code == 401
