"""The runner's side of the control channel (docs/control.md): commands in, acts, acks.

`Channel` reads `GET .../commands` as SSE in a thread of its own, resuming after
`Last-Event-ID` when the stream drops (with the backoff the output path uses), and hands
each command to `Commander.handle`, one at a time, in the server's order. The commander
acts on it through the driver (an input written to the agent's stdin, a permission
answered, an interrupt, a stop), records its id in the spool (fsync'ed), and only then
acknowledges it: a runner killed between acting and acknowledging finds the id in its
spool when it is resumed, and acknowledges the command without acting on it again.
"""
import codecs
import json
import signal
import subprocess
import threading
import time

import requests

from app.client.backoff import Backoff
from app.client.drivers import QUEUED
from app.client.drivers import DriveFailed
from app.client.drivers import NotSupported
from app.client.errors import ApiError
from app.client.errors import Unreachable
from app.client.sse import SseParser
from app.client.sse import arriving

API = "/api/remote/sessions"
# The server sends a keep-alive comment every KEEPALIVE_SECONDS (15 by default); three
# missed ones mean a dead link, and the runner reconnects.
READ_TIMEOUT_SECONDS = 45
# Tries of one acknowledgement the server does not answer or answers 5xx / 429.
ACK_TRIES = 8
STOP_GRACE_SECONDS = 5.0
# What each kind needs of the driver (an unknown kind is acknowledged `failed`).
KINDS = ("input", "permission", "interrupt", "stop")


class Commander:
    """Acts on commands in order; each acted on at most once, across resumed runs too."""

    def __init__(self, driver, child, spool, client, session_id, *, done=(), log=print,
                 stop_grace=STOP_GRACE_SECONDS):
        self.driver = driver
        self.child = child
        self.spool = spool
        self.client = client
        self.session_id = session_id
        self.done = set(done)
        self.before = set(done)  # acted on by an earlier run of this session
        self.log = log
        self.stop_grace = stop_grace
        self.backoff = Backoff()  # of acknowledgements; a test may swap both
        self.sleep = time.sleep
        self.stopping = threading.Event()
        self._stop_lock = threading.Lock()
        self.acted = []  # (command_id, kind, monotonic time it was acted on): for tests
        # Inputs the driver holds back ({uuid: command_id}): recorded and acknowledged
        # when it writes one (or drops it), so a runner killed meanwhile has not taken it,
        # and the server sends it again to the resumed run.
        self.held = {}
        driver.on_sent = self._sent
        driver.on_dropped = self._dropped

    def handle(self, command):
        """Act on one command (unless a run acted on it before), record it, acknowledge it."""
        command_id = command.get("command_id")
        if type(command_id) is not int:
            self.log(f"a command without a command id, left alone: {command!r}")
            return
        if command_id in self.done:
            self.log(f"command {command_id} was acted on before this run: acknowledging it")
            if command_id in self.before and command.get("kind") == "input":
                self._taken_before(command)
            self._ack(command_id, "done", None)
            return
        if command_id in self.held.values():
            return  # sent again while the driver holds it: it goes once, when written
        kind = command.get("kind")
        if kind == "input" and isinstance(command.get("uuid"), str):
            self.held[command["uuid"]] = command_id  # before send: on_sent may come at once
        outcome, reason = self._act(kind, command)
        if outcome == QUEUED:
            self.log(f"command {command_id}: the input waits for the agent's turn to end")
            return
        if kind == "input":
            self.held.pop(command.get("uuid"), None)
        self._record(command_id, kind)
        self._ack(command_id, outcome, reason)
        if kind == "stop" and outcome == "done":
            self.finish_stop()

    def _record(self, command_id, kind):
        """Acted on: durable in the spool before it is acknowledged."""
        self.acted.append((command_id, kind, time.monotonic()))
        self.spool.record_command(command_id)
        self.done.add(command_id)

    def _sent(self, uuid):
        """The driver wrote an input it held back (in the agent's reader thread: the
        acknowledgement, a request, goes from a thread of its own)."""
        self._release(uuid, "done", None)

    def _dropped(self, uuid, reason):
        self._release(uuid, "failed", reason)

    def _release(self, uuid, outcome, reason):
        command_id = self.held.pop(uuid, None)
        if command_id is None:
            return
        if outcome == "done":  # written: recorded before it is acknowledged, as in handle
            self._record(command_id, "input")
        threading.Thread(target=self._ack, args=(command_id, outcome, reason), daemon=True,
                         name=f"turnlog-ack-{command_id}").start()

    def _taken_before(self, command):
        """An input an earlier, killed run wrote to the agent: the agent's echo of it may
        have died with that run (Claude echoes a prompt only as its reply begins), though
        the agent took it (a resumed Claude has it in its conversation). The neutral
        prompt line under the same uuid makes it its user row; when the echo was stored,
        the row exists under that uuid and the line writes nothing again."""
        emit = getattr(self.driver, "emit", None)
        uuid, content = command.get("uuid"), command.get("content")
        if emit is not None and isinstance(uuid, str) and isinstance(content, str):
            emit(json.dumps({"type": "turnlog.user", "uuid": uuid, "content": content},
                            ensure_ascii=False))

    def _act(self, kind, command):
        """("done" | "failed", the reason of a failure)."""
        try:
            if kind == "input":
                if self.driver.send(command["uuid"], command["content"]) == QUEUED:
                    return QUEUED, None
            elif kind == "permission":
                self.driver.answer(command["request_id"], command.get("behavior", "deny"),
                                   command.get("message"))
            elif kind == "interrupt":
                self.driver.interrupt(self.child)
            elif kind == "stop":
                self.begin_stop(command.get("requested_by"))
            else:
                return "failed", f"unknown command kind {kind!r}"
        except NotSupported as err:
            return "failed", f"this runner's agent does not offer {err}"
        except DriveFailed as err:
            return "failed", str(err)
        except (KeyError, TypeError) as err:
            return "failed", f"a {kind} command without {err}"
        return "done", None

    def begin_stop(self, requested_by=None):
        """Close the agent's stdin (the first step of a stop); True the first time."""
        with self._stop_lock:
            if self.stopping.is_set():
                return False
            self.stopping.set()
        who = f" (asked by {requested_by})" if requested_by else ""
        self.log(f"stopping the agent{who}: its stdin closed")
        self.driver.close_stdin()
        return True

    def finish_stop(self):
        """After stdin closed: wait the grace period, then SIGTERM, then SIGKILL after another."""
        process = self.child.process
        for number in (signal.SIGTERM, signal.SIGKILL):
            try:
                process.wait(self.stop_grace)
                return
            except subprocess.TimeoutExpired:
                self.log(f"the agent still runs {self.stop_grace:g} s later:"
                         f" {signal.Signals(number).name}")
                self.child.signal(number)
        process.wait()

    def stop_locally(self):
        """A stop from the runner's own terminal (Ctrl-C), done in a thread of its own."""
        if self.begin_stop("this terminal"):
            threading.Thread(target=self.finish_stop, daemon=True, name="turnlog-stop").start()

    def _ack(self, command_id, outcome, reason):
        for _ in range(ACK_TRIES):
            try:
                self.client.ack_command(self.session_id, command_id, outcome, reason)
                self.backoff.reset()
                return True
            except ApiError as err:
                if not err.transient:
                    self.log(f"acknowledging command {command_id}: {err}")
                    return False
                self.sleep(self.backoff.next_delay(err.retry_after))
            except Unreachable:
                self.sleep(self.backoff.next_delay())
        self.log(f"acknowledging command {command_id}: no answer after {ACK_TRIES} tries; the"
                 " server sends it again, and a resumed run acknowledges it")
        return False


class Channel:
    """The command stream of one session, read in a thread until `close()` or its end."""

    def __init__(self, client, session_id, handle, *, log=print, backoff=None):
        self.client = client
        self.session_id = session_id
        self.handle = handle
        self.log = log
        self.backoff = backoff or Backoff()
        self.last_id = None
        self.closing = threading.Event()
        self.idle = threading.Event()  # set while no command is in hand
        self.idle.set()
        self._response = None
        self.thread = threading.Thread(target=self.run, daemon=True, name="turnlog-commands")

    def start(self):
        self.thread.start()
        return self

    def close(self, timeout=None):
        """Stop reading, waiting (up to `timeout`) for the command in hand, if any, to be
        acted on and acknowledged. A thread blocked reading the stream is left to die with
        the process (it is a daemon): closing a response from another thread does not
        always wake a blocked read."""
        self.closing.set()
        response = self._response
        if response is not None:
            try:
                response.close()
            except Exception:  # noqa: BLE001 (closing from another thread may race the reader)
                pass
        if threading.current_thread() is not self.thread:
            self.idle.wait(timeout)

    def run(self):
        path = f"{API}/{self.session_id}/commands"
        while not self.closing.is_set():
            try:
                self._response = self.client.open_stream(path, self.last_id, READ_TIMEOUT_SECONDS)
            except ApiError as err:
                if err.status in (404, 409) or not err.transient:
                    self.log(f"the command channel: {err}; no more commands")
                    return
                self._pause(err.retry_after)
                continue
            except Unreachable:
                self._pause(None)
                continue
            self.backoff.reset()
            try:
                self._read(self._response)
            except (requests.RequestException, AttributeError, ValueError, OSError):
                pass  # dropped (or closed by close()): resume after the last id
            finally:
                self._response.close()
            if not self.closing.is_set():
                self._pause(None)  # the server ended the stream: the session may be complete

    def _read(self, response):
        parser = SseParser()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        for chunk in arriving(response):
            for event in parser.feed(decoder.decode(chunk)):
                if self.closing.is_set():
                    return
                if event.event != "command":
                    continue
                try:
                    command = json.loads(event.data)
                except ValueError:
                    self.log(f"the command channel sent an event that is not JSON: {event.data!r}")
                    continue
                self.idle.clear()
                try:
                    self.handle(command)
                finally:
                    self.idle.set()
                if event.id is not None:
                    self.last_id = event.id

    def _pause(self, retry_after):
        self.closing.wait(self.backoff.next_delay(retry_after))
