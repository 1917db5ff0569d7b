"""`turnlog run`: open (or continue) a session, run the command, post its lines, complete.

Each line the child prints gets the next seq and goes to the spool in the thread
that read it (so a line read is never lost with the runner), then to the pump in
the main thread: it batches lines, fsyncs the spool, posts a due batch with the usage
reports of its result lines (counted in the batch's own transaction: no request of
their own), retrying and batching the child's lines meanwhile, and acknowledges it in
the spool. When both pipes are closed and nothing waits, the session is completed
with the child's exit code.

Nothing opens a session that cannot work: the command is found on the PATH first
(exit 127, or 126, as shells say, and no session). A session opened for a command that
then cannot start is completed as failed with the reason, and its spool removed. The
session records the command line (secrets redacted) and the first prompt; while the
child prints nothing the runner sends a heartbeat, so the server does not show the
session `stale`.

The runner's own ends keep the spool and exit with their own codes
(app/client/errors.py, docs/runner.md): a refusal or an unreadable spool 125, a batch
given up 124, a spool another run holds 123, a signal that ends the runner 128 + N.
"""
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from app.client import usage
from app.client.batcher import Batcher
from app.client.child import Child
from app.client.child import Tee
from app.client.child import check_runnable
from app.client.child import start_failure_code
from app.client.errors import RUNNER_FAILED
from app.client.errors import SPOOL_LOCKED
from app.client.errors import ApiError
from app.client.errors import RunnerFailed
from app.client.errors import Unreachable
from app.client.ids import is_session_id
from app.client.interactive import STOP_GRACE_SECONDS
from app.client.interactive import Interactive
from app.client.sender import MAX_BATCH_FAILURES
from app.client.sender import Sender
from app.client.spool import Spool
from app.client.spool import SpoolError
from app.client.spool import SpoolLocked
from app.core import command_line

__all__ = ["RUNNER_FAILED", "RunRequest", "run"]

# Lines taken off the queue at once before looking at the clock again.
DRAIN_LINES = 1000
SIGNALS = (signal.SIGINT, signal.SIGTERM)
# After this long without a batch posted, the runner says it is still there (POST
# .../runner): the server shows a session silent for RUNNER_STALE_SECONDS (120) `stale`.
HEARTBEAT_SECONDS = 20.0


@dataclass(frozen=True)
class RunRequest:
    command: tuple
    spool_dir: str
    session_type: str = "agent"
    provider: str = "claude"
    user_id: str | None = None
    context: dict | None = None
    session_id: str | None = None  # continue this session from its spool
    max_batch_failures: int = MAX_BATCH_FAILURES
    # the child's environment (the runner's, less its token, when None)
    child_env: dict | None = None
    # --interactive: drive the agent over its stdin from the session's command channel
    interactive: bool = False
    prompt: str | None = None  # the first input (interactive only)
    driver: str = "auto"
    stop_grace: float = STOP_GRACE_SECONDS
    # pass the child's stdout and stderr through to the runner's own (`turnlog run`
    # does, unless --quiet)
    tee: bool = False


def log(text):
    print(f"turnlog: {text}", file=sys.stderr, flush=True)


class Interrupted(BaseException):
    """SIGINT or SIGTERM ended the run (a BaseException, as KeyboardInterrupt is, so that
    no `except Exception` on the way swallows it)."""

    def __init__(self, number):
        super().__init__(number)
        self.number = number


class Signals:
    """SIGINT and SIGTERM. While the child runs and the server takes its lines, the first
    goes to the child alone, and the run posts what it printed and completes the session
    with its exit code. One that comes before the child starts, after it has exited, while
    the runner is retrying, or a second one, ends the runner at once (Interrupted): what
    is not posted stays in the spool.

    In an interactive run the first one stops the agent instead, as a stop command does
    (`first`: its stdin closed, SIGTERM and SIGKILL after the grace period), and the
    run completes the session with its exit code."""

    def __init__(self, sender):
        self.sender = sender
        self.child = None
        self.first = None  # an interactive run's stop
        self.received = 0
        self.number = None  # the last one received
        self.ending = False

    def install(self):
        for number in SIGNALS:
            signal.signal(number, self._handle)

    def _handle(self, number, _frame):
        self.received += 1
        self.number = number
        child = self.child
        if child is not None and child.running():
            if self.first is not None and self.received == 1 and not self.ending \
                    and not self.sender.failures:
                self.first()
                return
            child.signal(number)
            if self.ending or (self.received == 1 and not self.sender.failures):
                return
        if not self.ending:
            raise Interrupted(number)


def run(client, request, *, sender=None, batcher=None):
    """Run `request.command` into a session on `client`'s server; the exit code to exit with."""
    sender = sender or Sender(log=log, max_batch_failures=request.max_batch_failures)
    signals = Signals(sender)
    signals.install()
    spool = session_id = None
    try:
        check_runnable(request.command, child_env(request))  # before any session is opened
        opened = _session(client, request, sender)
        session_id, spool = opened.session_id, opened.spool
        return _run(client, request, sender, batcher, signals, opened)
    except RunnerFailed as failed:
        log(str(failed))
        code = failed.exit_code
    except Interrupted as stop:
        code = 128 + stop.number
        left = "" if session_id is None else (
            f": session {session_id} is left running (it reads `stale` until a run resumes it"
            f" from the spool); {client.viewer_url(session_id)}")
        log(f"stopped by {signal.Signals(stop.number).name} (exit {code}){left}")
    signals.ending = True  # from here a signal goes to the child at most
    if signals.child is not None:
        signals.child.stop()
    if spool is not None:
        spool.close()
        log(f"the spool {spool.path} keeps every line not acknowledged: continue with"
            f" `turnlog run --session {session_id} --spool {request.spool_dir} -- ...`")
    return code


def child_env(request):
    """The child's environment: the runner's (or the request's), less its token."""
    env = dict(os.environ if request.child_env is None else request.child_env)
    env.pop("TURNLOG_TOKEN", None)
    return env


def _run(client, request, sender, batcher, signals, opened):
    session_id, writer, spool, state = opened
    log(f"session {session_id}")
    log(f"viewer {client.viewer_url(session_id)}")
    env = child_env(request)
    env["TURNLOG_SESSION_ID"] = session_id
    live = None
    command = list(request.command)
    if request.interactive:
        live = Interactive(request, writer, session_id, spool, state, sender=sender, log=log)
        command = live.command()
    tee = Tee(sys.stdout.buffer, sys.stderr.buffer) if request.tee else None
    try:
        child = Child(command, Recorder(spool, state.next_seq if state else 0), env=env,
                      stdin_pipe=live is not None, translate=live and live.translate, echo=tee)
    except OSError as err:
        return _never_started(opened, sender, request, err)
    signals.child = child
    if live is not None:
        live.start(child)
        signals.first = live.stop_locally
    pump = Pump(writer, session_id, spool, child, sender, batcher or Batcher(), request.provider)
    if live is None:  # an interactive run's command channel says it is there
        pump.heartbeat = Heartbeat(writer, session_id)
    if state:
        pump.resend(state)
    pump.run()
    code = child.exit_code()
    if live is not None:
        live.close()
    session = sender.retrying("completing the session", lambda: writer.complete(session_id, code))
    signals.ending = True
    spool.remove()
    if signals.received:  # Ctrl-C: say what became of the session
        log(f"interrupted ({signal.Signals(signals.number).name}): session {session_id}"
            f" {how_it_ended(session, code)}; {client.viewer_url(session_id)}")
    return code


def how_it_ended(session, code):
    """`completed (exit 0)`, `completed as failed (exit 130)`: the completed session's status."""
    status = session.get("status") if isinstance(session, dict) else None
    if status in (None, "completed"):
        return f"completed (exit {code})"
    return f"completed as {status} (exit {code})"


def _never_started(opened, sender, request, err):
    """The command was found, yet could not be started: complete the session as failed
    with the reason and drop its spool; the exit code as shells give it. A resumed run's
    spool that still holds lines never posted is kept instead (RunnerFailed)."""
    session_id, writer, spool, state = opened
    reason = f"cannot start {request.command[0]!r}: {err.strerror or err}"
    if state and state.unacked:
        raise RunnerFailed(f"{reason}; the spool keeps {len(state.unacked)} lines not yet posted")
    code = start_failure_code(err)
    log(reason)
    sender.retrying("completing the session", lambda: complete_failed(writer, session_id, code,
                                                                       reason))
    spool.remove()
    return code


def complete_failed(writer, session_id, code, reason):
    """Complete the session as failed with `reason` (left out for a server from before
    sessions kept one)."""
    try:
        return writer.complete(session_id, code, reason=reason)
    except ApiError as err:
        if not unknown_field(err, "reason"):
            raise
        return writer.complete(session_id, code)


def unknown_field(err, *names):
    """Whether `err` is a 422 naming one of `names` among the body's fields it does not know."""
    fields = err.details.get("fields") if err.status == 422 else None
    return isinstance(fields, dict) and any(name in fields for name in names)


def run_facts(request):
    """What the session records of the run (docs/runner.md): the command line, secrets
    redacted, and the first prompt (an interactive run's --prompt, else the one on the
    agent's command line)."""
    prompt = request.prompt if request.interactive else command_line.first_prompt(request.command)
    facts = {"command": command_line.redacted(request.command),
             "prompt": command_line.prompt_text(prompt)}
    return {name: value for name, value in facts.items() if value is not None}


def _open(client, request):
    """Open the session with the run's facts; without them on a server that knows none."""
    facts = run_facts(request)

    def call(**extra):
        return client.open_session(request.session_type, provider=request.provider,
                                   user_id=request.user_id, context=request.context, **extra)

    try:
        return call(**facts)
    except ApiError as err:
        if not unknown_field(err, *facts):
            raise
        return call()


class Opened(NamedTuple):
    """The session a run writes: its id, the client that writes it, its spool, and the
    spool's state when the run continues one (None for a new session)."""

    session_id: str
    writer: object
    spool: object
    state: object


def _session(client, request, sender):
    """The session to write (Opened): continued from its spool, or opened anew."""
    if request.session_id:
        try:
            spool, state = Spool.resume(request.spool_dir, request.session_id)
        except SpoolLocked as err:
            raise RunnerFailed(str(err), SPOOL_LOCKED) from None
        except SpoolError as err:
            raise RunnerFailed(str(err)) from None
        return Opened(request.session_id, client, spool, state)
    opened = sender.retrying("opening a session (the agent has not started)",
                             lambda: _open(client, request))
    session_id = opened.get("session", {}).get("session_id")
    if not is_session_id(session_id):
        raise RunnerFailed(f"the server answered with session id {session_id!r}, which is not a"
                           " UUID: it names no spool file, and the run stops here")
    writer = client
    if opened.get("write_token"):
        writer = client.with_token(opened["write_token"])
        sender.token_name = "session's write token"
    try:
        spool = Spool.create(request.spool_dir, session_id, client.server)
    except (OSError, SpoolError) as err:
        raise RunnerFailed(f"cannot create the spool in {request.spool_dir}: {err}") from None
    mode = os.stat(request.spool_dir).st_mode & 0o777
    if mode & 0o077:  # made before the runner made its folders 0700, or by hand
        log(f"the spool folder {request.spool_dir} is open to others (mode {mode:o}): the agent's"
            f" output is in it; `chmod 700 {request.spool_dir}`")
    return Opened(session_id, writer, spool, None)


class Recorder:
    """Gives each line the next seq and spools it; called by both reader threads."""

    def __init__(self, spool, next_seq):
        self.spool = spool
        self.next_seq = next_seq
        self._lock = threading.Lock()

    def __call__(self, stream, text):
        with self._lock:
            chunk = {"seq": self.next_seq, "stream": stream, "data": text}
            self.next_seq += 1
            self.spool.append(chunk)
        return chunk


class _WithUsage:
    """The writer, posting each batch with the usage reports of its result lines."""

    def __init__(self, writer, reports):
        self.writer, self.reports = writer, reports

    def post_output(self, session_id, chunks):
        reports = [self.reports.report(c) for c in chunks]
        return self.writer.post_output(session_id, chunks, [r for r in reports if r])


class Pump:
    def __init__(self, writer, session_id, spool, child, sender, batcher, provider):
        self.writer = writer
        self.session_id = session_id
        self.spool = spool
        self.child = child
        self.sender = sender
        self.batcher = batcher
        self.provider = provider
        self.reports = usage.Reports(provider)
        self.heartbeat = None  # a Heartbeat, said after HEARTBEAT_SECONDS without a post
        sender.idle = self.absorb_for  # keep reading the child while a post waits to retry

    def resend(self, state):
        """Post what a crashed run spooled but never saw acknowledged. The usage of the
        lines it did was counted with them; a batch stored but not yet acknowledged comes
        back as duplicates, its reports as repeats."""
        chunks = state.unacked
        self.reports.read(line for line in state.lines if line["seq"] <= state.acked)
        if chunks:
            log(f"resending {len(chunks)} spooled lines not acknowledged before")
        for at in range(0, len(chunks), self.batcher.max_lines):
            self._post(chunks[at:at + self.batcher.max_lines])

    def run(self):
        """Until the child's pipes are closed and every line is posted."""
        while self.child.open_streams or len(self.batcher):
            wait = self.batcher.wait_time()
            if self.heartbeat is not None:
                due = self.heartbeat.due_in()
                wait = due if wait is None else min(wait, due)
                if due == 0.0:
                    self.heartbeat.say()
                    continue
            if self.child.open_streams:
                self.absorb(wait)
            if self.batcher.due() or (not self.child.open_streams and len(self.batcher)):
                self._post(self.batcher.take())

    def absorb(self, timeout):
        """Take the child's lines off the queue: wait up to `timeout` (None: until one comes)."""
        try:
            self._take(self.child.lines.get(timeout=timeout) if timeout != 0.0 else
                       self.child.lines.get_nowait())
            for _ in range(DRAIN_LINES - 1):
                self._take(self.child.lines.get_nowait())
        except queue.Empty:
            pass

    def absorb_for(self, seconds):
        """Wait `seconds`, batching the child's lines as they come (and fsyncing them)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.child.open_streams:
                self.absorb(left)
                self.spool.sync()
            else:
                time.sleep(left)

    def _take(self, chunk):
        if chunk is None:
            self.child.open_streams -= 1
        else:
            self.batcher.add(chunk)

    def _post(self, batch):
        self.spool.sync()  # on disk before the server may have it
        # each (sub-)batch carries its own lines' usage reports: counted with them or not at all
        self.sender.send(_WithUsage(self.writer, self.reports), self.session_id, batch)
        self.spool.ack(batch[-1]["seq"])
        if self.heartbeat is not None:
            self.heartbeat.seen()


class Heartbeat:
    """The runner's "still here" while the child prints nothing: POST .../runner (it
    offers no controls) once HEARTBEAT_SECONDS passed since its last post or heartbeat.
    One try each: a failed one is said once, and the next comes a period later."""

    def __init__(self, writer, session_id, seconds=HEARTBEAT_SECONDS, clock=time.monotonic):
        self.writer, self.session_id = writer, session_id
        self.seconds, self.clock = seconds, clock
        self.last = clock()
        self.failed = False

    def due_in(self):
        """Seconds until the next heartbeat is due (0.0: now)."""
        return max(0.0, self.last + self.seconds - self.clock())

    def seen(self):
        self.last = self.clock()

    def say(self):
        self.seen()
        try:
            self.writer.attach_runner(self.session_id, [])
            self.failed = False
        except (ApiError, Unreachable) as err:
            if not self.failed:
                log(f"heartbeat: {err} (the session may read `stale` until output goes through)")
            self.failed = True
