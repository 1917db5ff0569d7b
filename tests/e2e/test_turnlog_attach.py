"""`turnlog attach` as a subprocess against a real gunicorn with auth on, its stdin a pipe,
the runner played over HTTP with the real Claude lines of tests/fixtures/interactive:
a typed line reaches the command channel as a prompt and the reply shows; a permission
asks `allow? [y/N]` with the tool and its input, and the answer typed resolves it; one
answered elsewhere is shown and stops being asked; Ctrl-C interrupts, twice detaches."""
import os
import pty
import signal
import subprocess
import sys
import threading
import time

import pytest

from app.client.terminal.attach import DETACH_SECONDS
from tests import servers
from tests.e2e.runner_play import FIRST_UUID
from tests.e2e.runner_play import TURNLOG
from tests.e2e.runner_play import Live
from tests.e2e.runner_play import PlayedRunner
from tests.e2e.runner_play import claude_lines
from tests.e2e.runner_play import turnlog
from tests.e2e.test_turnlog_drive import ENV
from tests.e2e.test_turnlog_drive import REQUEST_ID
from tests.e2e.test_turnlog_drive import permission_cut
from tests.e2e.test_turnlog_drive import up_to_the_permission


@pytest.fixture
def world(database_url, tmp_path):
    """(server, runner token, alice's user token)."""
    with servers.gunicorn(tmp_path, auth=True, workers=1, threads=8, env=ENV,
                          database_url=database_url) as server:
        yield (server, server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
               server.new_token("create-user-token", "--user", "alice"))


@pytest.fixture
def attached(world):
    """Start `turnlog attach` on a played runner's session: (live, runner, world)."""
    server, runner_token, alice = world
    started = []

    def start(before=None):
        runner = PlayedRunner(server, runner_token)
        if before is not None:
            before(runner)
        live = Live(server, alice, "attach", runner.sid)
        started.append(live)
        live.wait_for("[attached to session", "stderr")
        return live, runner

    yield start
    for live in started:
        live.kill()


def test_a_typed_line_is_a_prompt_and_a_permission_is_answered_from_the_terminal(world, attached):
    _, _, alice = world
    live, runner = attached()
    live.type("say hello")
    command = runner.next_command()
    assert (command["kind"], command["content"]) == ("input", "say hello")
    live.wait_for("[input 1 queued]", "stderr")
    lines = [line.replace(FIRST_UUID, command["uuid"]) for line in claude_lines()]
    runner.post(lines[:7])  # the echo and the reply
    live.wait_for("Hello from the fake.")
    cut = permission_cut(lines)
    runner.post(lines[7:cut])  # the next prompt's turn, to its can_use_tool request
    rest = lines[cut:]
    live.wait_for("allow? [y/N] ")
    card = live.stdout.rsplit("[permission requested: Bash]", 1)[1]
    assert card.startswith("\n  $ touch made.txt\n  # make a file\n  (request " + REQUEST_ID)
    assert card.endswith("unless answered)\nallow? [y/N] ")
    live.type("y")
    answer = runner.next_command()
    assert (answer["kind"], answer["request_id"], answer["behavior"], answer["state"]) == (
        "permission", REQUEST_ID, "allow", "allowed")
    live.wait_for(f"[permission {REQUEST_ID}: allowed by alice")
    permission = runner.session(alice)
    assert permission["pending_permissions"] == []
    runner.post(rest[:5])  # the answer's echo, the tool's result, the reply, the result line
    live.wait_for("Done with the tool.")
    assert live.stdout.count("allow? [y/N]") == 1
    runner.complete(0)
    assert live.end() == 0, live.stderr
    assert live.stdout.endswith("[session completed, exit code 0]\n")


def test_a_permission_pending_before_attach_is_asked_and_one_answered_elsewhere_is_not(world, attached):
    server, _, alice = world
    live, runner = attached(before=up_to_the_permission)
    live.wait_for("allow? [y/N] ")  # asked from the session's pending list, not the replay only
    assert "$ touch made.txt" in live.stdout
    code, _, err = turnlog(server, alice, "approve", "--deny", "--message", "not here", runner.sid,
                           REQUEST_ID)
    assert code == 0, err
    live.wait_for(f"[permission {REQUEST_ID}: denied by alice")
    assert runner.next_command()["behavior"] == "deny"
    live.type("y")  # no question is open now: this is a prompt, not an answer
    command = runner.next_command()
    assert (command["kind"], command["content"]) == ("input", "y")
    live.proc.stdin.close()
    assert live.end() == 0
    assert "[end of input: detached; the session goes on]" in live.stderr
    assert runner.session(alice)["status"] == "running"


def test_an_empty_answer_denies(world, attached):
    _, _, alice = world
    live, runner = attached(before=up_to_the_permission)
    live.wait_for("allow? [y/N] ")
    live.type("")
    answer = runner.next_command()
    assert (answer["kind"], answer["behavior"]) == ("permission", "deny")
    live.wait_for(f"[permission {REQUEST_ID}: denied by alice")


def test_ctrl_c_interrupts_the_turn_and_a_second_one_detaches(attached):
    live, runner = attached()
    first = time.monotonic()
    live.proc.send_signal(signal.SIGINT)
    assert runner.next_command()["kind"] == "interrupt"
    live.wait_for("[interrupt sent]", "stderr")
    runner.post(claude_lines("claude_interrupt.jsonl"))  # what Claude prints for it
    live.wait_for("[turn interrupted]")
    assert live.proc.poll() is None  # one Ctrl-C only interrupts
    time.sleep(max(0.0, first + DETACH_SECONDS + 0.3 - time.monotonic()))
    live.proc.send_signal(signal.SIGINT)  # the window has passed: another interrupt
    assert runner.next_command()["kind"] == "interrupt"
    live.wait_for("[interrupt sent]", "stderr", count=2)
    live.proc.send_signal(signal.SIGINT)  # within the window: detach
    assert live.end() == 130
    assert "[detached; the session goes on]" in live.stderr
    assert runner.commands(wait=0.5) == []  # the detaching Ctrl-C interrupted nothing


CONTROLLING_TTY = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0);"
                   " os.execv(sys.argv[1], sys.argv[1:])")


class InTerminal:
    """`turnlog attach` on a pseudo-terminal of its own, as a person runs it: the tty's
    line discipline turns Enter into a line, Ctrl-C into SIGINT, Ctrl-D into end of input."""

    def __init__(self, server, token, sid):
        self.master, slave = pty.openpty()
        # a new session whose controlling tty is the pty (in the child, not by preexec_fn:
        # this process has threads)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CONTROLLING_TTY, str(TURNLOG), "attach", "--server",
             server.base, "--token", token, sid],
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.seen = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the other side is closed
                return
            if not chunk:
                return
            self.seen.extend(chunk)

    def keys(self, data):
        os.write(self.master, data)

    def wait_for(self, text, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.seen.decode("utf-8", "replace"):
                return
            time.sleep(0.02)
        raise AssertionError(f"{text!r} not on the terminal:\n{self.seen.decode('utf-8', 'replace')}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self.reader.join(timeout=5)
        os.close(self.master)


def test_in_a_real_terminal_enter_sends_y_allows_ctrl_c_interrupts_and_ctrl_d_detaches(world):
    server, runner_token, alice = world
    runner = PlayedRunner(server, runner_token)
    up_to_the_permission(runner)
    terminal = InTerminal(server, alice, runner.sid)
    try:
        terminal.wait_for("allow? [y/N] ")
        terminal.keys(b"y\r")  # Enter, as a terminal sends it
        assert runner.next_command()["behavior"] == "allow"
        terminal.wait_for(f"[permission {REQUEST_ID}: allowed by alice")
        terminal.keys(b"carry on\r")
        assert runner.next_command()["content"] == "carry on"
        terminal.keys(b"\x03")  # Ctrl-C
        assert runner.next_command()["kind"] == "interrupt"
        terminal.wait_for("[interrupt sent]")
        terminal.keys(b"\x04")  # Ctrl-D at the start of a line: end of input
        assert terminal.proc.wait(timeout=30) == 0
        terminal.wait_for("[end of input: detached; the session goes on]")
    finally:
        terminal.close()
