"""The runner's side of the control channel (docs/control.md): attach, wait for the
session's commands, acknowledge them.

A runner waits for commands in `wait_for_commands` (one long poll) or `follow_commands`
(an SSE stream): it reads the commands not yet acknowledged after its cursor and,
when there are none, waits on the process's `CommandBell` until a command is queued
for its session. Whoever queues one rings the bell after the commit (in this
process at once; on PostgreSQL the NOTIFY of migration 0025 rings it on every other
instance); a read at least every `poll_seconds` covers what no bell tells (another
process of a SQLite deployment). Each wait first expires the session's overdue
permissions (app/services/control.py), so a deny reaches the runner even when no
page is open. Flask-free: the web layer frames what these yield.
"""
import logging
import threading
import time
from dataclasses import dataclass

from app.core.clock import from_iso
from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import CommandNotFound
from app.core.errors import SessionNotFound
from app.services import control
from app.services import tokens
from app.services.access import OPEN
from app.services.streaming import Heartbeat

log = logging.getLogger(__name__)

OUTCOMES = ("done", "failed")
# Sessions whose ring counts the bell keeps before it forgets those nobody waits on.
KEPT_RINGS = 4096
# The listener outlives the last waiter by this long. A runner's stream waits, reads and
# waits again (a long-polling runner asks again after a round trip): a listener stopped
# at each read and started at the next wait woke every waiter on starting (its first
# read), which set off the next read at once, a loop that kept a worker's CPU busy for
# a single idle runner (and, on PostgreSQL, opened a connection each time).
LISTENER_LINGER_SECONDS = 3.0


def _start_daemon(target):
    threading.Thread(target=target, name="turnlog-command-bell", daemon=True).start()


class CommandBell:
    """Wakes the runners of a session waiting in this process. `ring(session_id)` after
    a command for it is committed; a waiter takes `mark(session_id)` before it reads,
    then `wait(session_id, mark, timeout)`, so a ring between its read and its wait is
    not missed (the wait returns at once). `listen(on_notify, stop, on_listening=)`
    (optional: PostgreSQL, or SQLite's poll of the other workers' commands) rings for the
    commands queued elsewhere, from the first wait until nobody has waited here for
    `linger_seconds`; each time it starts listening, every mark taken before is rung (a
    command committed before its LISTEN notified no one)."""

    def __init__(self, listen=None, start=_start_daemon, *, linger_seconds=LISTENER_LINGER_SECONDS,
                 monotonic=time.monotonic):
        self._listen = listen
        self._start = start
        self._linger = linger_seconds
        self._monotonic = monotonic
        self._idle_since = monotonic()
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self._rings = {}  # session_id -> how many rings, while someone waits on it
        self._waiting = {}  # session_id -> waiters
        self._listening = False
        self._generation = 0
        self._epoch = 0  # listener (re)connections: a mark older than the last one is rung

    def mark(self, session_id):
        """Where the session's rings stand now, for a following `wait`."""
        with self._lock:
            return self._rings.get(session_id, 0), self._epoch

    def ring(self, session_id):
        """A command for `session_id` was committed: wake its waiters. Counted whether or
        not one waits now, so a runner between its mark and its wait sees it too."""
        with self._lock:
            self._rings[session_id] = self._rings.get(session_id, 0) + 1
            if session_id in self._waiting:
                self._condition.notify_all()

    def wait(self, session_id, mark, timeout):
        """Block until the session rang since `mark` (True) or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._waiting[session_id] = self._waiting.get(session_id, 0) + 1
            start_listener = self._listen is not None and not self._listening
            self._listening = self._listening or start_listener
            generation = self._generation
        if start_listener:
            self._start(lambda: self._listen(self.ring, lambda: self._listener_done(generation),
                                             on_listening=self._listening_now))
        try:
            with self._lock:
                while (self._rings.get(session_id, 0), self._epoch) == mark:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._condition.wait(left)
                return True
        finally:
            self._leave(session_id)

    def _listener_done(self, generation):
        """The listener's `stop()`: true once nobody has waited for `linger_seconds`. The
        decision and `_listening` change under the lock together, so a runner that begins
        to wait afterwards starts a new listener."""
        with self._lock:
            if self._generation != generation:
                return True
            if self._waiting or self._monotonic() - self._idle_since < self._linger:
                return False
            self._listening = False
            self._generation += 1
            return True

    def _listening_now(self):
        """The listener's LISTEN took effect: wake every waiter, and every mark taken
        before, to read once more (a runner that began to wait as the listener started
        would otherwise sleep a whole poll interval over a command queued meanwhile)."""
        with self._lock:
            self._epoch += 1
            self._condition.notify_all()

    def waiting(self, session_id=None):
        """How many runners wait (on `session_id`, or on any session)."""
        with self._lock:
            if session_id is not None:
                return self._waiting.get(session_id, 0)
            return sum(self._waiting.values())

    def _leave(self, session_id):
        with self._lock:
            self._waiting[session_id] -= 1
            if not self._waiting[session_id]:
                del self._waiting[session_id]
            if len(self._rings) > KEPT_RINGS:
                # Forget the counts of sessions nobody waits on. A runner whose mark was
                # taken just before then wakes once for nothing, or (rarer) reads again
                # only after its poll interval: never a lost command.
                self._rings = {sid: n for sid, n in self._rings.items() if sid in self._waiting}
            if not self._waiting:
                self._idle_since = self._monotonic()  # the listener lingers from here


def polling_listener(read_moved, interval, *, sleep=time.sleep):
    """A CommandBell `listen(on_notify, stop, on_listening=)` for a database that
    notifies nobody (SQLite, whose workers are processes of one host): every `interval`
    seconds one read, `read_moved(after)` -> (the newest command id, the sessions with
    a command above `after`), rings those sessions. One query per process for all its
    waiting runners, so a command another worker queued wakes its runner within
    `interval`, not at the runner's next own read (`poll_seconds`). `on_listening()`
    after the first read, which only learns where the commands stand: a command
    committed before it is for the waiters to read once more."""
    def listen(on_notify, stop, on_listening=None):
        newest = None
        while not stop():
            try:
                first = newest is None
                newest, moved = read_moved(newest)
                if first and on_listening is not None:
                    on_listening()
            except Exception:  # the database may be down a while: runners poll meanwhile
                log.exception("command bell: reading the newest commands failed")
                moved = ()
            for session_id in moved:
                on_notify(session_id)
            sleep(interval)

    return listen


@dataclass(frozen=True)
class Channel:
    """How a runner's wait behaves: `poll_seconds` between reads at the latest,
    `heartbeat_seconds` between refreshes of runner_seen_at, `keepalive_seconds`
    between keep-alives on a stream, `batch` commands at most per read."""

    poll_seconds: float
    heartbeat_seconds: float
    keepalive_seconds: float = 15.0
    batch: int = 100
    settings: control.Settings = control.Settings()


@dataclass(frozen=True)
class Commands:
    """One read's commands, oldest first (a list of SessionCommand)."""

    commands: list


@dataclass(frozen=True)
class ChannelEnd:
    """The session completed: the stream ends."""

    status: str


def attach_runner(session_id, controls, uow, *, caller=OPEN, clock=utc_now, token_lifetime_seconds=0):
    """Record that a runner serves the session and what it offers; (controls, seen_at).
    A session write token is renewed as ingest renews it (an idle interactive session
    writes no output, yet its runner is there)."""
    controls = [name for name in control.CONTROLS if name in set(controls)]
    moment = clock()
    now = to_iso(moment)
    with uow:
        writable_session(uow, session_id, caller)
        uow.runners.attach(session_id, controls, now)
        tokens.renew_session_token(uow, caller, moment, token_lifetime_seconds)
        uow.commit()
    return controls, now


def open_channel(session_id, new_uow, *, caller=OPEN, clock=utc_now, token_lifetime_seconds=0):
    """SessionNotFound, before any waiting, unless `caller` may write the session; the
    session write token renewed when due."""
    with new_uow() as uow:
        writable_session(uow, session_id, caller)
    now = clock()
    if not (caller.is_session_token and token_lifetime_seconds):
        return
    due = iso_after(now, token_lifetime_seconds - tokens.renew_every(token_lifetime_seconds))
    if caller.expires_at is None or caller.expires_at < due:  # a write only when due
        with new_uow(write=True) as uow:
            tokens.renew_session_token(uow, caller, now, token_lifetime_seconds)
            uow.commit()


def wait_for_commands(session_id, after, new_uow, bell, channel, *, wait_seconds, on_queued=None,
                      clock=utc_now):
    """The session's unacknowledged commands after `after`, as soon as there is one, or
    [] after `wait_seconds` (or once the session is completed)."""
    deadline = time.monotonic() + wait_seconds
    reader = _Reader(session_id, after, new_uow, channel, on_queued, clock)
    while True:
        mark = bell.mark(session_id)
        commands, completed = reader.read()
        left = deadline - time.monotonic()
        if commands or completed or left <= 0:
            return commands
        bell.wait(session_id, mark, min(left, channel.poll_seconds))


def follow_commands(session_id, after, new_uow, bell, channel, *, on_queued=None, clock=utc_now,
                    monotonic=time.monotonic):
    """The session's commands after `after` as they come (`Commands`), `Heartbeat`s when
    quiet for `keepalive_seconds`, and a `ChannelEnd` once the session completes."""
    reader = _Reader(session_id, after, new_uow, channel, on_queued, clock)
    quiet_since = monotonic()
    while True:
        mark = bell.mark(session_id)
        commands, completed = reader.read()
        if commands:
            yield Commands(commands)
            quiet_since = monotonic()
            if len(commands) >= channel.batch:
                continue  # more may wait: read on at once
            # A command queued since `mark` rang, and the wait below returns at once
            # for it: no read that would find nothing.
        elif completed:
            yield ChannelEnd(completed)
            return
        if monotonic() - quiet_since >= channel.keepalive_seconds:
            yield Heartbeat()
            quiet_since = monotonic()
        bell.wait(session_id, mark, channel.poll_seconds)


class _Reader:
    """One runner's reads of its commands: the cursor moves past what it was given, the
    heartbeat is refreshed every `heartbeat_seconds`, overdue permissions expire."""

    def __init__(self, session_id, after, new_uow, channel, on_queued, clock):
        self.session_id = session_id
        self.after = after
        self.new_uow = new_uow
        self.channel = channel
        self.on_queued = on_queued
        self.clock = clock
        self.beat_at = None

    def read(self):
        """(new commands, the session's status once it is completed else None). Overdue
        permissions are looked for in the same read (one unit of work, not two: this runs
        for every runner at every wake-up); when some expired, their deny commands are
        read at once."""
        now = self.clock()
        with self.new_uow() as uow:
            due = uow.permissions.due_in_session(self.session_id, to_iso(now))
            commands = uow.commands.unacked_after(self.session_id, self.after, self.channel.batch)
            session = uow.sessions.get(self.session_id)
        if due and control.expire_due(self.session_id, self.new_uow, now=now,
                                      settings=self.channel.settings):
            if self.on_queued:
                self.on_queued(self.session_id)
            return self.read()
        if session is None:
            return [], "deleted"
        if commands:
            self.after = commands[-1].command_id
        seen = session.runner_seen_at  # an ack refreshes it too: no write until that is old
        if seen and (self.beat_at is None or seen > to_iso(self.beat_at)):
            self.beat_at = from_iso(seen)
        if self.beat_at is None or (now - self.beat_at).total_seconds() >= self.channel.heartbeat_seconds:
            with self.new_uow(write=True) as uow:
                uow.runners.heartbeat(self.session_id, to_iso(now))
                uow.commit()
            self.beat_at = now
        return commands, session.status if session.is_completed and not commands else None


def ack_command(session_id, command_id, outcome, reason, uow, *, caller=OPEN, clock=utc_now):
    """The runner acted on a command: record it once. For an `input`, `done` makes the
    input delivered (unless applied), `failed` makes it failed with `reason`. Returns
    (the command as stored, whether this call recorded it)."""
    now = to_iso(clock())
    with uow:
        writable_session(uow, session_id, caller)
        # The session's row first, as every write use case locks it (on PostgreSQL the
        # heartbeat's UPDATE takes its row lock): ingest applying this input's echo
        # locks that row, then the input's; the other order deadlocked under load.
        uow.runners.heartbeat(session_id, now)
        command = uow.commands.find(session_id, command_id)
        if command is None:
            raise CommandNotFound(f"session {session_id} has no command {command_id}",
                                  {"session_id": session_id, "command_id": command_id})
        recorded = uow.commands.ack(session_id, command_id, outcome, reason, now)
        if recorded and command.kind == "input":
            input_id = command.body.get("input_id")
            if outcome == "done":
                uow.inputs.mark_delivered(session_id, input_id, now)
            else:
                uow.inputs.mark_failed(session_id, input_id, reason or "the runner could not deliver it")
        command = uow.commands.find(session_id, command_id)
        uow.commit()
    return command, recorded


def writable_session(uow, session_id, caller):
    """The session, if `caller` (its write token, or a runner token of its machine)
    may write it; else SessionNotFound, as ingest answers."""
    session = uow.sessions.get(session_id)
    if session is None or not caller.may_write(session):
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    return session

