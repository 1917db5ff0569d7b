"""The whole chain, for real: a person drives the REAL Claude Code CLI through the REST API
only. gunicorn (auth on) on the test's database, `turnlog run --interactive -- claude`
with a runner token, the pinned Claude CLI (tests/agents/clis.py; skipped with the reason
when it is not installed) against the scripted fake Anthropic API (tests/agents/anthropic.py),
and a user token that sends prompts, answers permissions, interrupts and stops, checking
what the API answers (GET .../sessions/<id>, .../messages, the live /events) and the rows.

The runner talks to gunicorn through tests/holding_proxy.py, which passes everything at
once except what a test holds on purpose: output held (a delivered input seen before its
echo applies it), an acknowledgement held (the runner killed -9 between delivering an
input and acknowledging it). On PostgreSQL, one more test runs two instances on one
database: the runner on the first, the prompts posted to the second (the NOTIFY fan-out).
"""
import json
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.core.clock import from_iso
from app.db import writing
from app.services import tokens
from tests import servers
from tests.agents import anthropic
from tests.agents import clis
from tests.figures import record
from tests.holding_proxy import HoldingProxy
from tests.servers import call
from tests.sse_client import EventStream

TURNLOG = Path(sys.executable).parent / "turnlog"
SESSIONS = "/api/remote/sessions"
WAIT = 60  # seconds any one step may take on a loaded machine
# The two-instance test: each instance's command poll is this slow, so a prompt that
# reaches the runner sooner came by the NOTIFY fan-out; prompts sent and timed.
SLOW_POLL_SECONDS = 5
FAN_OUT_PROMPTS = 5
MISSING = clis.missing("claude")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))

SLOW_TEXT = " ".join(f"word{n}" for n in range(60))
SCENARIO = {"turns": [
    {"prompt": "Say hello to turnlog.", "replies": [{"text": "Hello, turnlog!"}]},
    {"prompt": "Create approved.txt with touch.",
     "replies": [{"tool": "shell", "command": "touch approved.txt"},
                 {"text": "Done: approved.txt is there."}]},
    {"prompt": "Create refused.txt with touch.",
     "replies": [{"tool": "shell", "command": "touch refused.txt"},
                 {"text": "I was not allowed to create refused.txt."}]},
    {"prompt": "Tell a slow story.", "replies": [{"text": SLOW_TEXT, "chunks": 60, "delay": 0.2}]},
    {"prompt": "After the interrupt, say done.", "replies": [{"text": "Done after the interrupt."}]},
    {"prompt": "Say once.", "replies": [{"text": "Once.", "chunks": 10, "delay": 0.3}]},
    {"prompt": "And now after.", "replies": [{"text": "After, in the same conversation."}]},
    {"prompt": "Quick question", "replies": [{"text": "Quick answer."}]},
]}


@dataclass
class Stack:
    server: object  # tests.servers.Gunicorn
    runner_token: str
    alice: str  # alice's user token: the person
    tmp: Path


def issue_tokens(app):
    """(runner token of machine m1 for alice, alice's user token), issued on the test's
    database in this process: `flask create-*-token` would cost a start of the app each."""
    with app.app_context():
        return (tokens.issue("runner", "m1", writing(), users=["alice"])[1],
                tokens.issue("user", "alice", writing())[1])


@pytest.fixture
def stack(app, database_url, tmp_path):
    # `app` makes the database a copy of the migrated template: gunicorn's db-upgrade is a no-op
    (tmp_path / "server").mkdir()
    with servers.gunicorn(tmp_path / "server", auth=True, database_url=database_url) as server:
        yield Stack(server, *issue_tokens(app), tmp_path)


class Runner:
    """One `turnlog run --interactive -- claude` process; its stderr in a file."""

    def __init__(self, stack, agent, base, *extra, session=None, name="run"):
        token_file = stack.tmp / "runner-token"
        token_file.write_text(stack.runner_token + "\n")
        self.err = stack.tmp / f"{name}.err"
        args = [TURNLOG, "run", "--server", base, "--token-file", str(token_file),
                "--spool", str(stack.tmp / "spool"), "--interactive", "--stop-grace", "5"]
        args += ["--session", session] if session else ["--user", "alice"]
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen([*args, *extra, "--", *agent.interactive()],
                                         env=agent.env, cwd=agent.cwd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)

    def stderr(self):
        return self.err.read_text()

    def session_id(self):
        found = until(lambda: re.search(r"^turnlog: session (\S+)$", self.stderr(), re.M),
                      "the runner's session id", self)
        return found.group(1)

    def wait(self):
        try:
            return self.proc.wait(WAIT)
        finally:
            self.reap()

    def reap(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


def until(predicate, what, runner=None, timeout=WAIT, every=0.02):
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            tail = runner.stderr()[-3000:] if runner else ""
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        time.sleep(every)


class Person:
    """alice at the API: every call with her user token."""

    def __init__(self, base, token, sid):
        self.base, self.token, self.sid = base, token, sid

    def call(self, method, suffix="", body=None, token=None):
        return call(self.base, method, f"{SESSIONS}/{self.sid}{suffix}", body,
                    token=token or self.token)

    def session(self):
        status, body = self.call("GET")
        assert status == 200, body
        return body["session"]

    def messages(self):
        status, body = self.call("GET", "/messages?limit=500")
        assert status == 200, body
        return body["messages"]

    def send(self, content, client_id):
        return self.call("POST", "/messages", {"content": content, "client_message_id": client_id})

    def answer(self, request_id, behavior, message=None, token=None):
        return self.call("POST", f"/permissions/{request_id}",
                         {"behavior": behavior, "message": message}, token=token)

    def reply_to(self, prompt, runner):
        """The assistant row right after the user row of `prompt`, once it is written."""
        def found():
            rows = self.messages()
            users = [n for n, m in enumerate(rows) if m["role"] == "user" and m["content"] == prompt]
            later = [m for m in rows[users[-1] + 1:] if m["role"] == "assistant"] if users else []
            return later[0] if later else None
        return until(found, f"the reply to {prompt!r}", runner, every=0.1)

    def pending_permission(self, runner):
        return until(lambda: self.session()["pending_permissions"], "a pending permission",
                     runner, every=0.1)[0]


class Events:
    """The session's /events, read live in a thread: [(monotonic time, name, data)]."""

    def __init__(self, base, sid, token):
        self.stream = EventStream(base, f"{SESSIONS}/{sid}/events",
                                  headers={"Authorization": f"Bearer {token}"})
        assert self.stream.status == 200
        self.got = []
        self.closing = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while not self.closing.is_set():
            try:
                frame = self.stream.next_frame(time.monotonic() + 0.5)
            except (TimeoutError, OSError):
                continue
            if frame is None:
                return
            if frame.event:
                self.got.append((time.monotonic(), frame.event, frame.data))

    def named(self, name):
        return [data for _, event, data in list(self.got) if event == name]

    def close(self):
        self.closing.set()
        self.stream.close()


def asked(model, text):
    """How many of the agent's model calls (those with tools) had `text` in their last
    user message."""
    with model.lock:
        bodies = [r["body"] for r in model.requests if model.has_tools(r["body"])]
    last = [[m for m in b.get("messages") or [] if m.get("role") == "user"][-1:] for b in bodies]
    return sum(1 for messages in last if messages and text in json.dumps(messages[0]))


def writer_token(proxy):
    """The session write token the runner posts with (what its agent could read and misuse)."""
    return until(lambda: next((auth.split()[1] for method, path, auth in list(proxy.seen)
                               if path.endswith("/runner") and auth), None),
                 "the runner's attach")


def test_a_person_drives_the_real_claude_cli_through_the_api(stack, tmp_path):
    server = stack.server
    with anthropic.server(SCENARIO) as model, HoldingProxy(server.address) as proxy:
        agent = clis.Agent.setup("claude", tmp_path / "agent", model.base)
        runner = Runner(stack, agent, proxy.base)
        try:
            sid = runner.session_id()
            alice = Person(server.base, stack.alice, sid)
            events = Events(server.base, sid, stack.alice)
            attached = until(lambda: alice.session()["controls"]["runner_attached"]
                             and alice.session()["controls"], "the runner attached", runner)
            assert all(attached[c] for c in ("send", "permissions", "interrupt", "stop"))
            sent_and_replied(alice, runner, proxy)
            allowed(alice, runner, proxy, events, agent, stack.runner_token)
            denied(alice, runner, events, agent, model)
            interrupted(alice, runner, events, model)
            status, body = alice.call("POST", "/stop")
            assert status == 202 and body["runner_attached"] is True, body
            code = runner.wait()
        finally:
            runner.reap()
    events.close()
    assert code == 0, runner.stderr()
    session = alice.session()
    assert (session["status"], session["exit_code"], session["stopped_by"]) == ("completed", 0, "alice")
    assert session["pending_inputs"] == [] and session["pending_permissions"] == []
    rows = alice.messages()
    assert session["message_count"] == len(rows)
    assert [m["content"] for m in rows if m["role"] == "user"] == [
        "Say hello to turnlog.", "Create approved.txt with touch.", "Create refused.txt with touch.",
        "Tell a slow story.", "After the interrupt, say done."]
    assert all(m["source"] == "remote_live" for m in rows)
    status, body = alice.send("too late", "c-late")
    assert status == 409 and body["error"]["code"] == "session_completed", body


def sent_and_replied(alice, runner, proxy):
    """send -> queued -> delivered (its ack; the echo held back) -> applied, a user row then
    an assistant row; the same client_message_id again is the same input, nothing written."""
    output = proxy.hold(lambda method, path: method == "POST" and path.endswith("/output"))
    status, body = alice.send("Say hello to turnlog.", "c-hello")
    assert status == 202, body
    sent = body["input"]
    assert sent["state"] == "queued" and sent["client_message_id"] == "c-hello"
    delivered = until(lambda: [i for i in alice.session()["pending_inputs"]
                               if i["state"] == "delivered"], "the input delivered", runner)
    assert delivered[0]["input_id"] == sent["input_id"]
    assert alice.messages() == []  # its echo (the output) is still held
    output.release()
    reply = alice.reply_to("Say hello to turnlog.", runner)
    assert reply["content"] == "Hello, turnlog!"
    rows = alice.messages()
    assert [(m["role"], m["content"]) for m in rows if m["role"] != "system"] == [
        ("user", "Say hello to turnlog."), ("assistant", "Hello, turnlog!")]
    assert alice.session()["message_count"] == len(rows)
    status, again = alice.send("Say hello to turnlog.", "c-hello")
    assert status == 200 and again["input"]["input_id"] == sent["input_id"], again
    assert again["input"]["state"] == "applied"
    assert alice.session()["pending_inputs"] == []
    assert alice.messages() == rows and alice.session()["message_count"] == len(rows)


def allowed(alice, runner, proxy, events, agent, runner_token):
    """A tool call -> a pending permission (GET and /events) -> neither the runner's token
    nor the session's write token may answer it -> alice allows -> the file exists; a
    second answer is 409 with the answer that won."""
    assert alice.send("Create approved.txt with touch.", "c-allow")[0] == 202
    ask = alice.pending_permission(runner)
    assert (ask["tool_name"], ask["input"]["command"], ask["state"]) == (
        "Bash", "touch approved.txt", "pending")
    assert ask["expires_at"] is not None
    requested = until(lambda: [e for e in events.named("permission.requested")
                               if e["request_id"] == ask["request_id"]], "permission.requested")
    assert requested[0]["tool_name"] == "Bash"
    write_token = writer_token(proxy)
    assert write_token != runner_token  # the session's own token, issued when it opened
    for token in (write_token, runner_token):  # an agent must not approve itself
        status, body = alice.answer(ask["request_id"], "allow", token=token)
        assert status == 403, body
    status, body = alice.answer(ask["request_id"], "allow")
    assert status == 200, body
    assert (body["permission"]["state"], body["permission"]["resolved_by"]) == ("allowed", "alice")
    status, late = alice.answer(ask["request_id"], "deny", message="too late")
    assert status == 409 and late["error"]["code"] == "already_resolved", late
    assert late["error"]["details"]["permission"]["state"] == "allowed"
    assert late["error"]["details"]["permission"]["resolved_by"] == "alice"
    assert alice.reply_to("Create approved.txt with touch.", runner)["content"] == \
        "Done: approved.txt is there."
    assert (agent.cwd / "approved.txt").exists()
    resolved = [e for e in events.named("permission.resolved") if e["request_id"] == ask["request_id"]]
    assert [(e["state"], e["resolved_by"]) for e in resolved] == [("allowed", "alice")]
    assert alice.session()["pending_permissions"] == []


def denied(alice, runner, events, agent, model):
    """Deny with a message: the tool does not run, the model reads the message, and the
    agent says so."""
    assert alice.send("Create refused.txt with touch.", "c-deny")[0] == 202
    ask = alice.pending_permission(runner)
    assert ask["input"]["command"] == "touch refused.txt"
    status, body = alice.answer(ask["request_id"], "deny", message="not in this folder")
    assert status == 200 and body["permission"]["state"] == "denied", body
    assert alice.reply_to("Create refused.txt with touch.", runner)["content"] == \
        "I was not allowed to create refused.txt."
    assert not (agent.cwd / "refused.txt").exists()
    with model.lock:
        last = [r["body"] for r in model.requests if model.has_tools(r["body"])][-1]
    results = [b for m in last["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert "not in this folder" in json.dumps(results[-1]) and results[-1].get("is_error") is True
    until(lambda: [e for e in events.named("permission.resolved")
                   if e["request_id"] == ask["request_id"] and e["state"] == "denied"],
          "the denial on /events")


def interrupted(alice, runner, events, model):
    """Interrupt during a slow reply: the turn ends, marked interrupted; the next prompt works."""
    assert alice.send("Tell a slow story.", "c-slow")[0] == 202
    until(lambda: asked(model, "Tell a slow story."), "the slow turn's model call", runner)
    time.sleep(1.0)  # a few of its words are out: the interrupt lands mid-reply
    status, body = alice.call("POST", "/interrupt")
    assert status == 202 and body["command"]["kind"] == "interrupt", body
    ended = until(lambda: [e for e in events.named("turn.completed") if e.get("interrupted")],
                  "the interrupted turn.completed", runner)
    assert len(ended) == 1
    assert alice.send("After the interrupt, say done.", "c-after")[0] == 202
    assert alice.reply_to("After the interrupt, say done.", runner)["content"] == \
        "Done after the interrupt."
    rows = alice.messages()
    assert not any(m["content"] == SLOW_TEXT for m in rows)  # the story never finished
    [marked] = [m for m in rows if (m.get("metadata") or {}).get("interrupted")]
    assert marked["role"] == "assistant" and marked["metadata"]["terminal_reason"] == "interrupted"
    assert SLOW_TEXT.startswith(marked["content"])  # what it said before the interrupt


def test_a_runner_killed_between_delivery_and_ack_then_resumed_gives_the_prompt_once(stack, tmp_path):
    """kill -9 after the runner wrote an input to Claude (the model has it) and before the
    server got its ack: the resumed runner acknowledges it without writing it again, the
    conversation goes on (--resume), and the prompt is one user row."""
    server = stack.server
    with anthropic.server(SCENARIO) as model, HoldingProxy(server.address) as proxy:
        agent = clis.Agent.setup("claude", tmp_path / "agent", model.base)
        first = Runner(stack, agent, proxy.base, "--prompt", "Say hello to turnlog.")
        try:
            sid = first.session_id()
            alice = Person(server.base, stack.alice, sid)
            assert alice.reply_to("Say hello to turnlog.", first)["content"] == "Hello, turnlog!"
            acks = proxy.hold(lambda method, path: path.endswith("/ack"))
            status, body = alice.send("Say once.", "c-once")
            assert status == 202, body
            acks.wait_held(WAIT)
            until(lambda: asked(model, "Say once."), "the prompt at the model", first)
            [agent_pid] = servers.worker_pids(first.proc.pid)  # the runner's one child: claude
            first.proc.send_signal(signal.SIGKILL)
            first.wait()
            acks.drop()  # the ack the killed runner sent never reaches the server
            until(lambda: not Path(f"/proc/{agent_pid}").exists(), "the orphaned CLI's exit")
            [pending] = alice.session()["pending_inputs"] or [{"state": "applied"}]
            assert pending["state"] in ("queued", "applied")  # never acknowledged

            resumed = Runner(stack, agent, proxy.base, session=sid, name="resumed")
            try:
                status, body = alice.send("And now after.", "c-after")
                assert status == 202, body
                assert alice.reply_to("And now after.", resumed)["content"] == \
                    "After, in the same conversation."
                assert alice.call("POST", "/stop")[0] == 202
                code = resumed.wait()
            finally:
                resumed.reap()
        finally:
            first.reap()
    err = resumed.stderr()
    assert code == 0, err
    assert re.search(r"command \d+ was acted on before this run: acknowledging it", err), err
    assert "--resume " in err
    assert asked(model, "Say once.") == 1  # written to the agent once, across both runs
    with model.lock:  # the resumed CLI carried the conversation on
        last = [r["body"] for r in model.requests if model.has_tools(r["body"])][-1]
    assert "Say hello to turnlog." in json.dumps(last["messages"])
    assert "Say once." in json.dumps(last["messages"])  # the agent took it, before the kill
    session = alice.session()
    rows = alice.messages()
    users = [m["content"] for m in rows if m["role"] == "user"]
    assert users == ["Say hello to turnlog.", "Say once.", "And now after."]
    assert session["message_count"] == len(rows)
    assert session["pending_inputs"] == [] and session["stopped_by"] == "alice"
    status, again = alice.send("Say once.", "c-once")
    assert status == 200 and again["input"]["state"] == "applied", again


def test_a_prompt_posted_to_one_instance_reaches_the_agent_of_a_runner_on_another(
        backend, app, database_url, rows, tmp_path):
    """PostgreSQL, two gunicorn instances on one database: the runner reads its commands
    from the first, alice posts to the second, and the prompt reaches Claude (its model
    call) in well under the instances' poll interval: by the NOTIFY fan-out."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL only: the fan-out between instances is its NOTIFY")
    env = {"TURNLOG_COMMAND_POLL_SECONDS": str(SLOW_POLL_SECONDS)}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with servers.gunicorn(tmp_path / "one", env=env, auth=True, database_url=database_url) as one, \
            servers.gunicorn(tmp_path / "two", env=env, auth=True, database_url=database_url) as two, \
            anthropic.server(SCENARIO) as model:
        stack = Stack(one, *issue_tokens(app), tmp_path)
        agent = clis.Agent.setup("claude", tmp_path / "agent", model.base)
        runner = Runner(stack, agent, one.base)
        try:
            alice = Person(two.base, stack.alice, runner.session_id())
            until(lambda: alice.session()["controls"]["runner_attached"], "the runner attached", runner)
            seconds = []
            for n in range(FAN_OUT_PROMPTS):
                prompt = f"Quick question {n}."
                posted = time.monotonic()
                status, body = alice.send(prompt, f"c-{n}")
                assert status == 202, body
                until(lambda: asked(model, prompt), "the prompt at the model", runner, every=0.005)
                seconds.append(time.monotonic() - posted)
                assert alice.reply_to(prompt, runner)["content"] == "Quick answer."
            assert alice.call("POST", "/stop")[0] == 202
            assert runner.wait() == 0, runner.stderr()
        finally:
            runner.reap()
        assert [m["content"] for m in alice.messages() if m["role"] == "user"] == [
            f"Quick question {n}." for n in range(FAN_OUT_PROMPTS)]
        assert alice.session()["stopped_by"] == "alice"
    first, later = seconds[0], sorted(seconds[1:])
    # the server's part: the command stored (instance two) -> its ack stored (instance one)
    acked = sorted((from_iso(done) - from_iso(made)).total_seconds() for made, done in rows(
        "SELECT created_at, acked_at FROM session_commands WHERE kind = 'input'"))
    assert len(acked) == FAN_OUT_PROMPTS
    record("interactive, real Claude CLI, two instances [postgresql]",
           command_to_ack_p50_ms=round(acked[len(acked) // 2] * 1000),
           command_to_ack_max_ms=round(acked[-1] * 1000),
           first_post_to_model_ms=round(first * 1000),  # with the CLI's own first-turn setup
           post_to_model_p50_ms=round(later[len(later) // 2] * 1000),
           post_to_model_max_ms=round(later[-1] * 1000))
    # loose on a loaded machine (the goal: under 1 s). A poll of the database would take
    # SLOW_POLL_SECONDS / 2 on average: the NOTIFY carried each one
    assert acked[len(acked) // 2] < 1 and acked[-1] < SLOW_POLL_SECONDS / 2, acked
    assert later[len(later) // 2] < 1.5, seconds
