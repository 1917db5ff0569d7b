"""`turnlog send`, `approve`, `interrupt` and `stop` against a real gunicorn with auth on,
as subprocesses: what each puts on the session's command channel (read as the runner
reads it), a send retried after a failure that reached the server queued once, the
first answer winning, and one clear line for each refusal."""
import threading
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

import pytest
import requests

from tests import servers
from tests.e2e.runner_play import FIRST_UUID
from tests.e2e.runner_play import Live
from tests.e2e.runner_play import PlayedRunner
from tests.e2e.runner_play import claude_lines
from tests.e2e.runner_play import json_line
from tests.e2e.runner_play import turnlog
from tests.http_handlers import QuietHandler

ENV = {"TURNLOG_STREAM_POLL_SECONDS": "0.02", "TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5"}
REQUEST_ID = "377ec1ef-387e-4cfe-a3d6-d51b2ecd96a7"  # the first can_use_tool of the capture


@pytest.fixture
def world(database_url, tmp_path):
    """(server, runner token, alice's user token, bob's user token)."""
    with servers.gunicorn(tmp_path, auth=True, workers=1, threads=8, env=ENV,
                          database_url=database_url) as server:
        yield (server, server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
               server.new_token("create-user-token", "--user", "alice"),
               server.new_token("create-user-token", "--user", "bob"))


def permission_cut(lines):
    """The index just after the first `can_use_tool` request of the capture."""
    return next(n for n, line in enumerate(lines) if '"can_use_tool"' in line) + 1


def up_to_the_permission(runner):
    """Post the capture up to its first `can_use_tool` request: a pending permission."""
    lines = claude_lines()
    runner.post(lines[:permission_cut(lines)])


def test_send_puts_the_prompt_on_the_channel_once_per_client_message_id(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    code, out, err = turnlog(server, alice, "send", runner.sid, "say hello")
    assert code == 0, err
    assert out.startswith("input 1 queued (client message id cli-")
    command = runner.next_command()
    assert (command["kind"], command["content"]) == ("input", "say hello")
    for _ in range(2):
        code, out, err = turnlog(server, alice, "send", "--json", "--client-message-id", "c-7",
                                 runner.sid, "once only")
        assert code == 0, err
        answer = json_line(out)
        assert (answer["input"]["client_message_id"], answer["input"]["input_id"]) == ("c-7", 2)
        assert answer["runner_attached"] is True
    assert runner.next_command()["content"] == "once only"
    assert runner.commands(wait=1.0) == []  # the repeat queued nothing
    # the prompt is applied by the agent's echo of its uuid, as the real runner would post it
    runner.post([line.replace(FIRST_UUID, command["uuid"]) for line in claude_lines()[:7]])
    pending = runner.session(alice)["pending_inputs"]
    assert [(i["client_message_id"], i["state"]) for i in pending] == [("c-7", "delivered")]
    code, _, err = turnlog(server, alice, "send", runner.sid, "-", stdin="two\nlines\n")
    assert code == 0, err
    assert runner.next_command()["content"] == "two\nlines\n"


class DropFirstAnswer(QuietHandler):
    """Forwards every request to the upstream server; the first POST whose path holds
    `part` is forwarded too, but its answer is replaced by a 502: it reached the server,
    which acted."""

    upstream = None
    part = None
    dropped = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self._forward()

    def do_POST(self):  # noqa: N802
        self._forward()

    def _forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        answer = requests.request(self.command, self.upstream + self.path, data=body,
                                  headers=headers, timeout=30)
        status, data = answer.status_code, answer.content
        if self.command == "POST" and self.part in self.path and not self.dropped:
            self.dropped.append(answer.status_code)
            status, data = 502, b"<html>bad gateway</html>"
        self.send_body(status, data, answer.headers.get("Content-Type", "text/html"))


@contextmanager
def dropping_proxy(upstream, part):
    handler = type("Handler", (DropFirstAnswer,), {"upstream": upstream, "part": part, "dropped": []})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy, handler
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_a_send_whose_answer_was_lost_is_retried_with_its_id_and_queued_once(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    with dropping_proxy(server.base, "/messages") as (proxy, handler):
        through = f"http://127.0.0.1:{proxy.server_address[1]}"
        code, out, err = turnlog(through, alice, "send", runner.sid, "exactly once")
    assert handler.dropped == [202]  # the first try was taken, its answer lost
    assert code == 0, err
    assert "502" in err and "retrying in" in err
    assert out.startswith("input 1 queued")  # the retry found the input the first try queued
    assert runner.next_command()["content"] == "exactly once"
    assert runner.commands(wait=1.0) == []


def test_a_send_waits_for_a_server_that_is_not_up_yet(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    servers.kill_hard(server)
    sending = Live(server, alice, "send", runner.sid, "after the restart")
    try:
        sending.wait_for("retrying in", "stderr")  # refused: the server is down
        with servers.gunicorn_again(server):
            assert sending.end(60) == 0, sending.stderr
            assert sending.stdout.startswith("input 1 queued")
            assert runner.next_command()["content"] == "after the restart"
    finally:
        sending.kill()


def test_approve_answers_the_permission_and_the_second_answer_names_the_first(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    up_to_the_permission(runner)
    assert [p["request_id"] for p in runner.session(alice)["pending_permissions"]] == [REQUEST_ID]
    code, out, err = turnlog(server, alice, "approve", runner.sid, REQUEST_ID)
    assert code == 0, err
    assert out.startswith(f"permission {REQUEST_ID}: allowed by alice at ")
    command = runner.next_command()
    assert (command["kind"], command["request_id"], command["behavior"]) == (
        "permission", REQUEST_ID, "allow")
    code, out, err = turnlog(server, alice, "approve", "--deny", "--message", "no", runner.sid,
                             REQUEST_ID)
    assert (code, out) == (1, "")
    assert err.startswith("Error: permission ") and "the first answer wins: allowed by alice" in err
    assert len(err.strip().splitlines()) == 1
    assert runner.commands(wait=0.5) == []
    assert runner.session(alice)["pending_permissions"] == []


def test_an_answer_whose_reply_was_lost_is_repeated_and_found_to_be_the_winner(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    up_to_the_permission(runner)
    with dropping_proxy(server.base, "/permissions/") as (proxy, handler):
        code, out, err = turnlog(f"http://127.0.0.1:{proxy.server_address[1]}", alice, "approve",
                                 runner.sid, REQUEST_ID)
    assert handler.dropped == [200] and "retrying in" in err
    assert code == 0, err
    assert out.startswith(f"permission {REQUEST_ID}: allowed by alice")
    assert runner.next_command()["behavior"] == "allow"
    assert runner.commands(wait=0.5) == []  # answered once


def test_approve_deny_with_a_message_reaches_the_runner_as_json(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    up_to_the_permission(runner)
    code, out, err = turnlog(server, alice, "approve", "--json", "--deny", "--message",
                             "use the other file", runner.sid, REQUEST_ID)
    assert code == 0, err
    permission = json_line(out)["permission"]
    assert (permission["state"], permission["message"], permission["resolved_by"]) == (
        "denied", "use the other file", "alice")
    command = runner.next_command()
    assert (command["behavior"], command["message"]) == ("deny", "use the other file")
    code, out, err = turnlog(server, alice, "approve", runner.sid, "no-such-request")
    assert code == 1 and "has no permission request no-such-request" in err


def test_interrupt_and_stop_reach_the_runner_and_a_completed_session_refuses(world):
    server, runner_token, alice, _ = world
    runner = PlayedRunner(server, runner_token)
    code, out, err = turnlog(server, alice, "interrupt", runner.sid)
    assert code == 0 and out.startswith("interrupt queued (command 1)"), err
    assert runner.next_command()["kind"] == "interrupt"
    code, out, err = turnlog(server, alice, "stop", "--json", runner.sid)
    assert code == 0, err
    assert json_line(out)["command"]["kind"] == "stop"
    stop = runner.next_command()
    assert (stop["kind"], stop["requested_by"]) == ("stop", "alice")
    runner.complete(0)
    assert runner.session(alice)["stopped_by"] == "alice"
    for args in (("send", runner.sid, "late"), ("interrupt", runner.sid), ("stop", runner.sid)):
        code, out, err = turnlog(server, alice, *args)
        assert code == 1 and f"session {runner.sid} is completed" in err, (args, err)


def test_refusals_say_why_in_one_line(world):
    server, runner_token, alice, bob = world
    runner = PlayedRunner(server, runner_token, controls=("interrupt", "stop"))
    code, _, err = turnlog(server, alice, "send", runner.sid, "hi")
    assert code == 1 and "does not offer `send`" in err and "it offers: interrupt, stop" in err
    code, _, err = turnlog(server, bob, "interrupt", runner.sid)
    assert code == 1 and f"no session {runner.sid} for this token" in err
    code, _, err = turnlog(server, runner_token, "stop", runner.sid)
    assert code == 1 and "a runner token cannot drive a session" in err and "user token" in err
    code, _, err = turnlog(server, runner.token, "send", runner.sid, "hi")
    assert code == 1 and "a runner token cannot" in err  # the session's write token is a runner's
    code, out, err = turnlog(server, "tlu_not-a-real-token", "send", "--json", runner.sid, "hi")
    assert code == 1 and "refused the token" in err and "user token" in err
    assert json_line(out)["error"]["status"] == 401
    assert len(err.strip().splitlines()) == 1
    assert runner.commands(wait=0.5) == []  # nothing refused reached the channel
