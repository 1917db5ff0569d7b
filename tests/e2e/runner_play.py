"""Playing the runner of an interactive session over real HTTP, for the tests of the
terminal's commands: open a session with a runner token, attach with its write token,
read the command channel (long poll), acknowledge, post the agent's lines (the real
Claude captures of tests/fixtures/interactive); and the `turnlog` console script as a
subprocess whose output is read as it comes."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.servers import call

SESSIONS = "/api/remote/sessions"
TURNLOG = Path(sys.executable).parent / "turnlog"
INTERACTIVE = Path(__file__).resolve().parents[1] / "fixtures" / "interactive"
FIRST_UUID = "11111111-1111-4111-8111-111111111111"
DEADLINE = 30


def claude_lines(name="claude_permissions.jsonl"):
    return (INTERACTIVE / name).read_text().splitlines()


class PlayedRunner:
    """One session of `server`, opened for alice on machine m1 with `runner_token`."""

    def __init__(self, server, runner_token, controls=("send", "permissions", "interrupt", "stop")):
        self.base = server.base
        status, body = call(self.base, "POST", SESSIONS, {
            "session_type": "agent", "provider": "claude", "user_id": "alice", "machine": "m1"},
            token=runner_token)
        assert status == 201, body
        self.sid = body["session"]["session_id"]
        self.token = body["write_token"]
        self.path = f"{SESSIONS}/{self.sid}"
        self.seq = 0
        self.after = 0
        if controls is not None:
            status, body = call(self.base, "POST", f"{self.path}/runner",
                                {"controls": list(controls)}, token=self.token)
            assert status == 200, body

    def commands(self, wait=0.0):
        """The commands after the last one read (waiting up to `wait` seconds for one)."""
        status, body = call(self.base, "GET", f"{self.path}/commands?after={self.after}&wait={wait}",
                            token=self.token)
        assert status == 200, body
        self.after = body["last_command_id"]
        return body["commands"]

    def next_command(self, seconds=DEADLINE):
        """The next command, acknowledged; fails after `seconds` without one."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = self.commands(wait=min(5.0, max(0.1, deadline - time.monotonic())))
            if found:
                assert len(found) == 1, found
                self.ack(found[0]["command_id"])
                return found[0]
        raise AssertionError(f"no command within {seconds} s")

    def ack(self, command_id, outcome="done"):
        status, body = call(self.base, "POST", f"{self.path}/commands/{command_id}/ack",
                            {"outcome": outcome}, token=self.token)
        assert status == 200, body

    def post(self, lines):
        chunks = [{"seq": self.seq + n, "stream": "stdout", "data": line}
                  for n, line in enumerate(lines)]
        status, body = call(self.base, "POST", f"{self.path}/output", {"chunks": chunks},
                            token=self.token)
        assert status == 200, body
        self.seq += len(lines)

    def complete(self, exit_code=0):
        status, body = call(self.base, "POST", f"{self.path}/complete", {"exit_code": exit_code},
                            token=self.token)
        assert status == 200, body

    def session(self, user_token):
        status, body = call(self.base, "GET", self.path, token=user_token)
        assert status == 200, body
        return body["session"]


def turnlog(server, token, *args, timeout=DEADLINE, stdin=None):
    """Run `turnlog ARGS --server ... --token ...` to its end: (exit code, stdout, stderr).
    `server` is a Gunicorn or a base URL."""
    command, rest = args[0], args[1:]
    done = subprocess.run([TURNLOG, command, "--server", getattr(server, "base", server), "--token", token, *rest],
                          capture_output=True, text=True, timeout=timeout, input=stdin,
                          env={k: v for k, v in os.environ.items() if k != "TURNLOG_TOKEN"})
    return done.returncode, done.stdout, done.stderr


class Live:
    """A `turnlog` subprocess with its stdin a pipe and its output read as it comes."""

    def __init__(self, server, token, *args):
        self.proc = subprocess.Popen(
            [TURNLOG, args[0], "--server", server.base, "--token", token, *args[1:]],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if k != "TURNLOG_TOKEN"})
        self.out, self.err = bytearray(), bytearray()
        self._readers = [threading.Thread(target=self._read, args=(pipe, into), daemon=True)
                         for pipe, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe, into):
        while chunk := os.read(pipe.fileno(), 65536):
            into.extend(chunk)

    @property
    def stdout(self):
        return self.out.decode("utf-8", "replace")

    @property
    def stderr(self):
        return self.err.decode("utf-8", "replace")

    def wait_for(self, text, where="stdout", seconds=DEADLINE, count=1):
        """Wait until `text` was printed `count` times (on stdout or stderr)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if getattr(self, where).count(text) >= count:
                return
            if self.proc.poll() is not None:
                time.sleep(0.2)  # what it printed last may still be in the pipe
                if getattr(self, where).count(text) >= count:
                    return
                break
            time.sleep(0.02)
        raise AssertionError(f"{text!r} not on {where} (exit {self.proc.poll()}):\n"
                             f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}")

    def type(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def end(self, seconds=DEADLINE):
        """Its exit code, once it exits (within `seconds`) and its output is read."""
        code = self.proc.wait(timeout=seconds)
        self._close()
        return code

    def kill(self):
        """Make sure it is gone (a test's `finally`)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close()

    def _close(self):
        for reader in self._readers:
            reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if not pipe.closed:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass


def json_line(text):
    """The one JSON document `turnlog ... --json` printed."""
    return json.loads(text.strip())
