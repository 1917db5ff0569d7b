"""`turnlog attach SESSION`: follow a live session as `turnlog follow` does, and drive it.

A typed line is sent as a prompt (retried with the same client_message_id); a pending
permission prints its card and asks `allow? [y/N]`, and the next line answers it;
Ctrl-C interrupts the agent's turn, and a second Ctrl-C within DETACH_SECONDS detaches
(exit 130, as `follow` ends on Ctrl-C); end of input (Ctrl-D) detaches (exit 0); the
session's end ends it (exit 0). Refusals are one `Error:` line, exit 1.

Three sources feed one queue, read by the main thread, which alone talks to the user
and posts: the follower thread (live events), the stdin thread (typed lines), and the
SIGINT handler (a SimpleQueue may be written from a signal handler). A permission is
asked only once the session's GET lists it as pending, so a request from the replayed
history that was resolved long ago is never asked.
"""
import codecs
import json
import os
import queue
import signal
import sys
import threading
import time

import click

from app.client.commands import ConfigurationError
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.render import Renderer
from app.client.render import header
from app.client.terminal.calls import RETRY_SECONDS
from app.client.terminal.calls import answer_once
from app.client.terminal.calls import explain
from app.client.terminal.calls import resolution_text
from app.client.terminal.calls import with_retries
from app.client.terminal.commands import new_message_id
from app.client.terminal.commands import session_argument
from app.client.terminal.commands import with_client
from app.client.terminal.prompts import QUESTION
from app.client.terminal.prompts import answer_of
from app.client.terminal.prompts import permission_card

DETACH_SECONDS = 3.0
# How often the main thread looks again when nothing came (the follower may have ended).
IDLE_SECONDS = 0.5
# After a failed look at the pending permissions, the next one waits this long.
ASK_AGAIN_SECONDS = 5.0
DETACHED, CTRL_C_EXIT = 0, 130


class Detach(Exception):
    """The second Ctrl-C: raised by the signal handler wherever the main thread is."""


class Screen:
    """stdout and stderr shared by two threads; knows whether stdout is mid-line, so a
    note or a question starts on a line of its own."""

    def __init__(self, out=sys.stdout, err=sys.stderr):
        self._out, self._err = out, err
        self._lock = threading.Lock()
        self._mid_line = False

    def write(self, text):
        with self._lock:
            self._write(text)

    def line(self, text, end="\n"):
        """`text` on stdout at the start of a line."""
        with self._lock:
            self._break()
            self._write(text + end)

    def typed(self):
        """A line was typed on the terminal: its echo ended the line the screen was on."""
        with self._lock:
            self._mid_line = False

    def note(self, text):
        """A line of attach's own on stderr."""
        with self._lock:
            self._break()
            self._err.write(text + "\n")
            self._err.flush()

    def _break(self):
        if self._mid_line:
            self._write("\n")

    def _write(self, text):
        if text:
            self._out.write(text)
            self._out.flush()
            self._mid_line = not text.endswith("\n")


class Attach:
    """One attached terminal: `run()` until the session ends or the person detaches."""

    def __init__(self, client, session_id, screen, *, clock=time.monotonic, tty=False):
        self.client, self.sid, self.screen, self.clock = client, session_id, screen, clock
        self.tty = tty  # stdin is a terminal, which echoes what is typed (and ^C)
        self.events = queue.SimpleQueue()
        self.asking = None  # the pending permission whose answer the next line is
        self.candidates = {}  # request_id -> True: requested, not yet asked or dropped
        self.seen = set()  # requests announced to this terminal
        self.answered = set()  # requests this terminal answered (their resolution is shown)
        self.last_ctrl_c = None
        self.ask_again_at = 0.0

    def on_sigint(self, _signum, _frame):
        now = self.clock()
        if self.last_ctrl_c is not None and now - self.last_ctrl_c <= DETACH_SECONDS:
            raise Detach()
        self.last_ctrl_c = now
        self.events.put(("interrupt", None))

    def start(self):
        """Check the session, tell the person what they can do; the threads start."""
        session = self.client.get_session(self.sid)
        self.screen.note(intro(session))
        for pending in session.get("pending_permissions") or []:
            self.candidates[pending["request_id"]] = True
        threading.Thread(target=self._follow, name="follow", daemon=True).start()
        threading.Thread(target=self._read_stdin, name="stdin", daemon=True).start()

    def run(self):
        """The exit code: 0 when the session ended or input did, 1 on a refusal."""
        while True:
            try:
                kind, data = self.events.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                kind, data = "idle", None
            done = self.handle(kind, data)
            if done is not None:
                return done
            if self.events.empty():
                self.ask_next()

    def handle(self, kind, data):
        if kind == "line":
            return self._on_line(data)
        if kind == "requested":
            self.seen.add(data["request_id"])
            self.candidates[data["request_id"]] = True
        elif kind == "resolved":
            self._on_resolved(data)
        elif kind == "interrupt":
            self._interrupt()
        elif kind == "eof":
            self.screen.note("[end of input: detached; the session goes on]")
            return DETACHED
        elif kind in ("end", "error"):
            if data:
                self.screen.note(f"Error: {data}")
            return 1 if data else 0
        return None

    def _on_line(self, line):
        if self.tty:
            self.screen.typed()
        if self.asking is not None:
            self._answer(self.asking, answer_of(line))
        elif line.strip():
            self._send(line)
        return None

    def _send(self, text):
        message_id = new_message_id()
        try:
            answer = with_retries(lambda: self.client.send_message(self.sid, text, message_id),
                                  True, budget=RETRY_SECONDS, on_retry=self._on_retry)
        except (ApiError, Unreachable) as error:
            self.screen.note(f"Error: {explain(error, self.sid)}")
            return
        waits = "" if answer.get("runner_attached") else "; no runner is attached: it waits for one"
        self.screen.note(f"[input {answer['input']['input_id']} {answer['input']['state']}{waits}]")

    def _answer(self, permission, behavior):
        rid = permission["request_id"]
        self.asking = None
        self.candidates.pop(rid, None)
        try:
            answer = answer_once(self.client, self.sid, rid, behavior, on_retry=self._on_retry)
        except (ApiError, Unreachable) as error:
            self.screen.note(f"Error: {explain(error, self.sid)}")
            return
        self.answered.add(rid)
        self.screen.line(f"[permission {rid}: {resolution_text(answer['permission'])}]")

    def _on_resolved(self, data):
        rid = data["request_id"]
        self.candidates.pop(rid, None)
        if self.asking is not None and self.asking["request_id"] == rid:
            self.asking = None
        elif rid not in self.seen or rid in self.answered:
            return
        self.screen.line(f"[permission {rid}: {resolution_text(data)}]")

    def _interrupt(self):
        try:
            with_retries(lambda: self.client.interrupt(self.sid), False, budget=0)
        except (ApiError, Unreachable) as error:
            self.screen.note(f"Error: {explain(error, self.sid)}")
        else:
            self.screen.note(("\n" if self.tty else "") + "[interrupt sent]")  # after the ^C echo
        self.screen.note(f"[Ctrl-C again within {DETACH_SECONDS:g} s detaches]")

    def ask_next(self):
        """Ask about the oldest request the session still lists as pending."""
        if self.asking is not None or not self.candidates or self.clock() < self.ask_again_at:
            return
        try:
            pending = self.client.get_session(self.sid).get("pending_permissions") or []
        except (ApiError, Unreachable) as error:
            self.screen.note(f"Error: {explain(error, self.sid)} (asking again in"
                             f" {ASK_AGAIN_SECONDS:g} s)")
            self.ask_again_at = self.clock() + ASK_AGAIN_SECONDS  # not at every idle tick
            return
        by_id = {p["request_id"]: p for p in pending}
        for rid in list(self.candidates):
            if rid not in by_id:
                del self.candidates[rid]
        if self.candidates:
            self.asking = by_id[next(iter(self.candidates))]
            self.seen.add(self.asking["request_id"])
            for text in permission_card(self.asking):
                self.screen.line(text)
            self.screen.line(QUESTION, end="")

    def _on_follow_retry(self, reason, delay, tries):
        if tries == 1 or tries % 10 == 0:  # as `turnlog follow` says it
            self.screen.note(f"[{reason}; retrying in {delay:.1f} s (try {tries})]")

    def _on_retry(self, error, delay):
        self.screen.note(f"[{error}; retrying in {delay:.1f} s]")

    def _follow(self):
        renderer = Renderer(self.screen.write, self.screen.write)
        follower = self.client.with_token(self.client.token)  # its own HTTP session
        try:
            for event in follower.follow(self.sid, on_retry=self._on_follow_retry):
                renderer.handle(event)
                if event.event in ("permission.requested", "permission.resolved"):
                    self.events.put((event.event.split(".")[1], json.loads(event.data)))
                elif event.event == "turn.completed" and json.loads(event.data).get("interrupted"):
                    self.screen.line("[turn interrupted]")  # follow shows nothing of it
        except (ApiError, Unreachable) as error:
            self.events.put(("error", explain(error, self.sid)))
            return
        self.events.put(("end", None))

    def _read_stdin(self):
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        while True:
            try:
                chunk = os.read(sys.stdin.fileno(), 65536)
            except OSError:
                chunk = b""
            pending += decoder.decode(chunk, final=not chunk)
            *lines, pending = pending.split("\n")
            for line in lines:
                self.events.put(("line", line.removesuffix("\r")))
            if not chunk:
                if pending:
                    self.events.put(("line", pending))
                self.events.put(("eof", None))
                return


def intro(session):
    """The first note: which session, and what can be done to it now (or why not)."""
    if session.get("status") != "running":
        return f"[{header(session)}: its transcript follows; nothing can be sent]"
    controls = session.get("controls") or {}
    reasons = controls.get("reasons") or {}
    lines = [f"[attached to {header(session)}]",
             f"[type a prompt and Enter to send it; Ctrl-C interrupts the agent's turn, twice"
             f" within {DETACH_SECONDS:g} s detaches]"]
    for control in ("send", "permissions", "interrupt"):
        if control in reasons:
            lines.append(f"[{control}: {reasons[control]}]")
    return "\n".join(lines)


@click.command("attach")
@with_client
@session_argument
def attach(client, session_id):
    """Follow SESSION live and drive it: a typed line is a prompt, a permission asks
    allow? [y/N], Ctrl-C interrupts the turn (twice: detach)."""
    terminal = Attach(client, session_id, Screen(), tty=sys.stdin.isatty())
    signal.signal(signal.SIGINT, terminal.on_sigint)
    try:
        try:
            terminal.start()
        except Misconfigured as wrong:
            raise ConfigurationError(wrong.message) from None
        except (ApiError, Unreachable) as error:
            raise click.ClickException(explain(error, session_id)) from None
        code = terminal.run()
    except Detach:
        terminal.screen.note("[detached; the session goes on]")
        code = CTRL_C_EXIT
    sys.exit(code)
