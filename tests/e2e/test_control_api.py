"""The control channel through the test client with auth on (docs/control.md): a runner
attaches, reads its commands (long poll and SSE) and acknowledges them; the owner or an
admin answers permissions, interrupts and stops; who may do what; expiry; the session
GET's controls. Rows are checked with SQL."""
import json
import threading
import time

import pytest

from app import create_app
from app.core.inputs import input_uuid
from app.db import writing
from app.services import tokens
from app.streaming import live
from tests.api import bearer

SESSIONS = "/api/remote/sessions"
PAST = "2000-01-01T00:00:00.000000Z"
FUTURE = "2999-01-01T00:00:00.000000Z"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "COMMAND_POLL_SECONDS": 0.05}


@pytest.fixture
def world(app, client):
    """alice's running session, opened by runner m1 (with its write token), and tokens."""
    with app.app_context():
        secrets = {
            "alice": tokens.issue("user", "alice", writing())[1],
            "bob": tokens.issue("user", "bob", writing())[1],
            "admin": tokens.issue("user", "root", writing(), is_admin=True)[1],
            "runner": tokens.issue("runner", "m1", writing())[1],
            "runner2": tokens.issue("runner", "m2", writing())[1],
        }
    opened = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice", "machine": "m1"},
                         headers=bearer(secrets["runner"]))
    assert opened.status_code == 201
    body = opened.get_json()
    secrets["write"] = body["write_token"]
    return {"sid": body["session"]["session_id"], **secrets}


def url(world, suffix):
    return f"{SESSIONS}/{world['sid']}{suffix}"


def attach(client, world, controls=("send", "permissions", "interrupt", "stop"), who="write"):
    response = client.post(url(world, "/runner"), json={"controls": list(controls)},
                           headers=bearer(world[who]))
    assert response.status_code == 200, response.get_json()
    return response.get_json()["runner"]


def poll(client, world, after=0, wait=0, who="write"):
    response = client.get(url(world, f"/commands?after={after}&wait={wait}"),
                          headers=bearer(world[who]))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def send(client, world, content="hello", client_id="c-1", who="alice"):
    return client.post(url(world, "/messages"), json={"content": content, "client_message_id": client_id},
                       headers=bearer(world[who]))


def ask(rows, world, request_id="R1", expires_at=FUTURE):
    """A pending permission request, as ingest records one."""
    rows("INSERT INTO session_permissions (session_id, request_id, tool_name, tool_input,"
         " requested_at, expires_at, state) VALUES (?, ?, 'Bash', ?, ?, ?, 'pending')",
         world["sid"], request_id, json.dumps({"command": "ls"}), PAST, expires_at)


def answer(client, world, request_id="R1", behavior="allow", who="alice", message=None):
    return client.post(url(world, f"/permissions/{request_id}"),
                       json={"behavior": behavior, "message": message}, headers=bearer(world[who]))


def resolved_lines(rows, world):
    payloads = rows("SELECT payload FROM remote_runtime_outputs WHERE session_id = ?"
                    " ORDER BY event_index", world["sid"])
    return [json.loads(p) for (p,) in payloads if "turnlog.permission_resolved" in p]


# -- the runner's side

def test_a_runner_attaches_and_the_session_shows_its_controls(client, world, rows):
    before = client.get(url(world, ""), headers=bearer(world["alice"])).get_json()["session"]
    assert before["controls"]["runner_attached"] is False
    assert before["controls"]["send"] is False and "no runner" in before["controls"]["reasons"]["send"]
    runner = attach(client, world, controls=("send", "send"))
    assert runner["attached"] is True and runner["controls"] == ["send"]
    session = client.get(url(world, ""), headers=bearer(world["alice"])).get_json()["session"]
    controls = session["controls"]
    assert controls["runner_attached"] is True and controls["runner_seen_at"] == runner["seen_at"]
    assert (controls["send"], controls["interrupt"], controls["stop"]) == (True, False, False)
    assert set(controls["reasons"]) == {"permissions", "interrupt", "stop"}
    assert session["pending_permissions"] == [] and session["stopped_by"] is None
    assert rows("SELECT runner_controls FROM agent_sessions") == [('["send"]',)]


def test_a_sent_prompt_is_a_command_the_runner_reads_and_acknowledges(client, world, rows):
    attach(client, world)
    sent = send(client, world, content="run the tests")
    assert sent.status_code == 202 and sent.get_json()["runner_attached"] is True
    input_id = sent.get_json()["input"]["input_id"]
    got = poll(client, world)
    [command] = got["commands"]
    assert command["kind"] == "input" and got["last_command_id"] == command["command_id"]
    assert command["input_id"] == input_id and command["content"] == "run the tests"
    assert command["uuid"] == input_uuid(world["sid"], input_id)
    assert send(client, world, content="run the tests").status_code == 200  # a repeat queues nothing
    assert poll(client, world)["commands"] == [command]  # not acknowledged: sent again
    acked = client.post(url(world, f"/commands/{command['command_id']}/ack"), json={"outcome": "done"},
                        headers=bearer(world["write"]))
    assert acked.status_code == 200 and acked.get_json()["command"]["outcome"] == "done"
    again = client.post(url(world, f"/commands/{command['command_id']}/ack"),
                        json={"outcome": "failed", "reason": "late"}, headers=bearer(world["runner"]))
    assert again.status_code == 200 and again.get_json()["command"]["outcome"] == "done"
    assert rows("SELECT state, reason FROM session_inputs") == [("delivered", None)]
    assert rows("SELECT COUNT(*) FROM session_commands") == [(1,)]
    assert poll(client, world)["commands"] == []
    assert poll(client, world, after=command["command_id"]) == {
        "commands": [], "last_command_id": command["command_id"]}


def test_a_failed_delivery_fails_the_input_with_the_reason(client, world, rows):
    send(client, world)
    [command] = poll(client, world)["commands"]
    client.post(url(world, f"/commands/{command['command_id']}/ack"),
                json={"outcome": "failed", "reason": "stdin closed"}, headers=bearer(world["write"]))
    assert rows("SELECT state, reason FROM session_inputs") == [("failed", "stdin closed")]
    pending = client.get(url(world, ""), headers=bearer(world["alice"])).get_json()["session"]
    assert pending["pending_inputs"][0]["reason"] == "stdin closed"


def test_an_unknown_command_is_404_and_a_bad_cursor_or_wait_is_refused(client, world):
    response = client.post(url(world, "/commands/999/ack"), json={"outcome": "done"},
                           headers=bearer(world["write"]))
    assert response.status_code == 404 and response.get_json()["error"]["code"] == "command_not_found"
    for beyond in (2**63, 19497364950775815471104):  # no column holds it: unknown, not a 500
        response = client.post(url(world, f"/commands/{beyond}/ack"), json={"outcome": "failed"},
                               headers=bearer(world["write"]))
        assert response.status_code == 404, response.get_json()
        assert response.get_json()["error"]["code"] == "command_not_found"
    assert client.get(url(world, "/commands?after=x"), headers=bearer(world["write"])).status_code == 400
    response = client.get(url(world, "/commands?wait=31"), headers=bearer(world["write"]))
    assert response.status_code == 422 and response.get_json()["error"]["code"] == "invalid_wait"


def test_a_long_poll_returns_as_soon_as_a_command_is_queued(client, world, app):
    attach(client, world)
    got = {}

    def wait():
        with app.test_client() as other:
            got["body"] = other.get(url(world, "/commands?wait=10"),
                                    headers=bearer(world["write"])).get_json()
            got["at"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    posted = time.monotonic()
    assert send(client, world).status_code == 202
    waiter.join(10)
    assert [c["kind"] for c in got["body"]["commands"]] == ["input"]
    assert got["at"] - posted < 5  # loose: the bell wakes it at once


def test_a_command_posted_while_a_runner_waits_on_the_sse_stream_arrives(client, world, app):
    attach(client, world)
    events, ready = [], threading.Event()

    def follow():
        with app.test_client() as other:
            response = other.get(url(world, "/commands"), buffered=False,
                                 headers={**bearer(world["write"]), "Accept": "text/event-stream"})
            assert response.status_code == 200
            for chunk in response.response:
                text = chunk.decode() if isinstance(chunk, bytes) else chunk
                ready.set()
                if "event: command" in text:
                    events.append((time.monotonic(), text))
                    response.close()
                    return

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert ready.wait(10)
    time.sleep(0.2)
    posted = time.monotonic()
    assert client.post(url(world, "/interrupt"), headers=bearer(world["alice"])).status_code == 202
    follower.join(10)
    [(arrived, text)] = events
    assert '"kind":"interrupt"' in text and "id: 1\n" in text
    assert arrived - posted < 5  # loose


def test_the_sse_stream_sends_what_is_queued_after_the_cursor_and_ends_with_the_session(
        client, world):
    send(client, world, client_id="a")
    send(client, world, client_id="b")
    client.post(url(world, "/complete"), json={"exit_code": 0}, headers=bearer(world["write"]))
    response = client.get(url(world, "/commands"), headers={**bearer(world["write"]),
                                                             "Last-Event-ID": "1",
                                                             "Accept": "text/event-stream"})
    text = response.get_data(as_text=True)
    response.close()
    assert text.count("event: command") == 1 and "id: 2\n" in text
    assert text.rstrip().endswith('data: {"status":"completed"}')


# -- the clients' side

def test_the_first_answer_wins_and_queues_the_permission_command(client, world, rows):
    attach(client, world)
    ask(rows, world)
    first = answer(client, world, message=None)
    assert first.status_code == 200
    permission = first.get_json()["permission"]
    assert (permission["state"], permission["resolved_by"]) == ("allowed", "alice")
    assert permission["input"] == {"command": "ls"}
    second = answer(client, world, behavior="deny", who="admin")
    assert second.status_code == 409
    error = second.get_json()["error"]
    assert error["code"] == "already_resolved"
    assert error["details"]["permission"]["state"] == "allowed"
    assert error["details"]["permission"]["resolved_by"] == "alice"
    [command] = poll(client, world)["commands"]
    assert {k: command[k] for k in ("kind", "request_id", "behavior", "state", "message")} == {
        "kind": "permission", "request_id": "R1", "behavior": "allow", "state": "allowed",
        "message": None}
    [line] = resolved_lines(rows, world)
    assert (line["request_id"], line["state"], line["behavior"], line["resolved_by"]) == (
        "R1", "allowed", "allow", "alice")
    assert rows("SELECT state, resolved_by FROM session_permissions") == [("allowed", "alice")]
    assert rows("SELECT next_event_index FROM agent_sessions") == [(1,)]


def test_a_deny_carries_its_message_and_an_unknown_request_is_404(client, world, rows):
    ask(rows, world)
    denied = answer(client, world, behavior="deny", message="not that", who="admin")
    assert denied.status_code == 200 and denied.get_json()["permission"]["state"] == "denied"
    [command] = poll(client, world)["commands"]
    assert (command["behavior"], command["message"], command["state"]) == ("deny", "not that", "denied")
    missing = answer(client, world, request_id="nope")
    assert missing.status_code == 404
    assert missing.get_json()["error"]["code"] == "permission_not_found"
    bad = client.post(url(world, "/permissions/R1"), json={"behavior": "maybe"},
                      headers=bearer(world["alice"]))
    assert bad.status_code == 422


def test_a_request_id_with_a_slash_is_answered_by_its_url(client, world, rows):
    """Request ids are the agent's own (any string); one with "/" is still one path."""
    ask(rows, world, request_id="call/7")
    answered = answer(client, world, request_id="call/7")
    assert answered.status_code == 200
    assert answered.get_json()["permission"]["request_id"] == "call/7"
    [command] = poll(client, world)["commands"]
    assert command["request_id"] == "call/7"
    assert answer(client, world, request_id="call").status_code == 404


def test_an_unanswered_permission_expires_denied_and_the_runner_is_told(client, world, rows):
    ask(rows, world, expires_at=PAST)
    ask(rows, world, request_id="R2", expires_at=FUTURE)
    session = client.get(url(world, ""), headers=bearer(world["alice"])).get_json()["session"]
    assert [p["request_id"] for p in session["pending_permissions"]] == ["R2"]
    assert rows("SELECT request_id, state, resolved_by FROM session_permissions ORDER BY request_id") == [
        ("R1", "expired", None), ("R2", "pending", None)]
    [command] = poll(client, world)["commands"]
    assert (command["request_id"], command["behavior"], command["state"]) == ("R1", "deny", "expired")
    late = answer(client, world)
    assert late.status_code == 409
    assert late.get_json()["error"]["details"]["permission"]["state"] == "expired"
    assert [line["state"] for line in resolved_lines(rows, world)] == ["expired"]


def test_the_command_channel_expires_due_permissions_itself(client, world, rows):
    ask(rows, world, expires_at=PAST)
    [command] = poll(client, world)["commands"]
    assert (command["kind"], command["state"]) == ("permission", "expired")
    assert rows("SELECT COUNT(*) FROM session_commands") == [(1,)]
    assert poll(client, world)["commands"] == [command]  # expired once, sent until acknowledged


def test_interrupt_and_stop_queue_commands_and_stop_records_who(client, world, rows):
    attach(client, world)
    interrupted = client.post(url(world, "/interrupt"), headers=bearer(world["alice"]))
    assert interrupted.status_code == 202
    assert interrupted.get_json()["command"]["kind"] == "interrupt"
    assert interrupted.get_json()["runner_attached"] is True
    stopped = client.post(url(world, "/stop"), headers=bearer(world["admin"]))
    assert stopped.status_code == 202
    assert stopped.get_json()["command"]["body"] == {"requested_by": "root"}
    assert [c["kind"] for c in poll(client, world)["commands"]] == ["interrupt", "stop"]
    client.post(url(world, "/complete"), json={"exit_code": 143}, headers=bearer(world["write"]))
    assert rows("SELECT stopped_by FROM agent_sessions") == [("root",)]
    session = client.get(url(world, ""), headers=bearer(world["alice"])).get_json()["session"]
    assert session["stopped_by"] == "root"
    assert session["controls"]["stop"] is False
    assert "completed" in session["controls"]["reasons"]["stop"] or "failed" in session["controls"]["reasons"]["stop"]
    for suffix in ("/interrupt", "/stop"):
        late = client.post(url(world, suffix), headers=bearer(world["alice"]))
        assert late.status_code == 409 and late.get_json()["error"]["code"] == "session_completed"


def test_a_session_completed_without_a_stop_has_no_stopped_by(client, world, rows):
    client.post(url(world, "/complete"), json={"exit_code": 0}, headers=bearer(world["write"]))
    assert rows("SELECT stopped_by FROM agent_sessions") == [(None,)]


@pytest.mark.parametrize("suffix, kind", [("/interrupt", "interrupt"), ("/stop", "stop"),
                                          ("/messages", "send")])
def test_what_the_attached_runner_does_not_offer_is_409_not_supported(client, world, rows, suffix, kind):
    attach(client, world, controls=("permissions",))
    if suffix == "/messages":
        response = send(client, world)
    else:
        response = client.post(url(world, suffix), headers=bearer(world["alice"]))
    assert response.status_code == 409
    error = response.get_json()["error"]
    assert error["code"] == "not_supported" and error["details"]["control"] == kind
    assert rows("SELECT COUNT(*) FROM session_commands") == [(0,)]
    assert rows("SELECT COUNT(*) FROM session_inputs") == [(0,)]


def test_without_an_attached_runner_a_command_waits_for_one(client, world):
    response = client.post(url(world, "/interrupt"), headers=bearer(world["alice"]))
    assert response.status_code == 202 and response.get_json()["runner_attached"] is False
    assert send(client, world).get_json()["runner_attached"] is False


# -- who may do what

CLIENT_ROUTES = ("/messages", "/permissions/R1", "/interrupt", "/stop")
BODIES = {"/messages": {"content": "x", "client_message_id": "m"},
          "/permissions/R1": {"behavior": "allow"}}


@pytest.mark.parametrize("suffix", CLIENT_ROUTES)
@pytest.mark.parametrize("who", ["runner", "write"])
def test_runner_and_write_tokens_get_403_on_every_client_route(client, world, rows, suffix, who):
    ask(rows, world)
    response = client.post(url(world, suffix), json=BODIES.get(suffix, {}), headers=bearer(world[who]))
    assert response.status_code == 403
    assert rows("SELECT COUNT(*) FROM session_commands") == [(0,)]
    assert rows("SELECT state FROM session_permissions") == [("pending",)]


@pytest.mark.parametrize("suffix", CLIENT_ROUTES)
def test_another_users_session_is_404_on_every_client_route(client, world, rows, suffix):
    ask(rows, world)
    response = client.post(url(world, suffix), json=BODIES.get(suffix, {}), headers=bearer(world["bob"]))
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"
    assert rows("SELECT COUNT(*) FROM session_commands") == [(0,)]


@pytest.mark.parametrize("method, suffix", [("post", "/runner"), ("get", "/commands"),
                                            ("post", "/commands/1/ack")])
def test_the_runner_routes_take_no_user_token_and_no_other_machine(client, world, method, suffix):
    body = {"controls": []} if suffix == "/runner" else {"outcome": "done"}
    as_user = getattr(client, method)(url(world, suffix), json=body, headers=bearer(world["alice"]))
    assert as_user.status_code == 403
    other = getattr(client, method)(url(world, suffix), json=body, headers=bearer(world["runner2"]))
    assert other.status_code == 404


def viewer(client, world):
    """Sign alice in at /login (the cookie); the CSRF token the pages give her scripts."""
    from tests.e2e.test_auth import form_csrf
    from tests.e2e.test_auth import sign_in
    assert sign_in(client, world["alice"]).status_code == 302
    return form_csrf(client, "/sessions")


@pytest.mark.parametrize("suffix", CLIENT_ROUTES)
def test_a_browser_post_without_its_csrf_token_is_400_and_with_it_works(client, world, rows, suffix):
    ask(rows, world)
    token = viewer(client, world)
    for headers in ({}, {"X-CSRF-Token": "forged"}):
        refused = client.post(url(world, suffix), json=BODIES.get(suffix, {}), headers=headers)
        assert refused.status_code == 400
        assert refused.get_json()["error"]["code"] == "csrf_failed"
    assert rows("SELECT COUNT(*) FROM session_commands") == [(0,)]
    done = client.post(url(world, suffix), json=BODIES.get(suffix, {}), headers={"X-CSRF-Token": token})
    assert done.status_code in (200, 202), done.get_json()
    assert rows("SELECT created_by FROM session_commands") == [("alice",)]


@pytest.mark.parametrize("how", ["attach", "poll"])
def test_a_waiting_runner_keeps_its_write_token_alive(client, world, rows, how):
    soon = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z",
                         time.gmtime(time.time() + 60))
    rows("UPDATE agent_tokens SET expires_at = ? WHERE session_id = ?", soon, world["sid"])
    if how == "attach":
        attach(client, world)
    else:
        poll(client, world)
    ((expires,),) = rows("SELECT expires_at FROM agent_tokens WHERE session_id = ?", world["sid"])
    assert expires > soon  # pushed a lifetime on, as a write of output pushes it


def test_an_open_command_stream_holds_one_of_the_process_s_stream_places(app, client, world):
    other_app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"]})
    with other_app.app_context():
        live.take_stream_slot()  # left open: another app's place is not this one's
    app.config["MAX_STREAMS_PER_PROCESS"] = 1
    headers = {**bearer(world["write"]), "Accept": "text/event-stream"}
    first = client.get(url(world, "/commands"), headers=headers, buffered=False)
    assert first.status_code == 200
    second = client.get(url(world, "/commands"), headers=headers, buffered=False)
    assert second.status_code == 429
    assert second.get_json()["error"]["code"] == "too_many_streams"
    first.close()
    third = client.get(url(world, "/commands"), headers=headers, buffered=False)
    assert third.status_code == 200
    third.close()
