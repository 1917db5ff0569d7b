"""The clients' side of the control channel (docs/control.md): answer a permission,
interrupt, stop; what the session's runner offers; permissions that ran out.

Each use case queues a command for the runner in the transaction that decides it;
the caller rings the command bell (app/services/commands.py) after the commit. A
permission's resolution (an answer, or its expiry: denied, fail-closed) also appends
a server-authored stdout line `turnlog.permission_resolved` to the session's buffer,
through ingest's own fold, in the same transaction: the provider parsers turn it into
the live event `permission.resolved`, so /events tells every follower.
"""
import json
import logging
from dataclasses import dataclass
from datetime import timedelta

from app.core.clock import from_iso
from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import AlreadyResolved
from app.core.errors import NotPermitted
from app.core.errors import NotSupported
from app.core.errors import PermissionNotFound
from app.core.errors import SessionClosed
from app.core.errors import SessionNotFound
from app.core.records import StoredOutput
from app.providers import get_parser
from app.services import ingest
from app.services.access import OPEN
from app.services.access import USER

log = logging.getLogger(__name__)
CONTROLS = ("send", "permissions", "interrupt", "stop")
# The control a runner must offer for each kind of command.
CONTROL_OF = {"input": "send", "permission": "permissions", "interrupt": "interrupt", "stop": "stop"}
EXPIRED_MESSAGE = "no one answered in time: denied"
RESOLVED_LINE = "turnlog.permission_resolved"


@dataclass(frozen=True)
class Settings:
    """`attached_seconds`: a runner seen this recently is attached;
    `retention_seconds`: how long the announcement line stays in the buffer."""

    attached_seconds: float = 30
    retention_seconds: float = 7 * 24 * 3600


@dataclass(frozen=True)
class Queued:
    """A command queued now, and whether a runner was attached to take it."""

    command: object
    runner_attached: bool


def require_person(caller):
    """NotPermitted unless a person (user token or viewer) calls: an agent, through its
    runner's or session's token, must not prompt, approve, interrupt or stop itself."""
    if not (caller.is_open or caller.kind == USER):
        raise NotPermitted("only the session's owner or an admin may do this",
                           {"token_kind": caller.kind})


def answer_permission(session_id, request_id, behavior, message, uow, *, caller=OPEN,
                      clock=utc_now, settings=Settings()):
    """Resolve the pending request as the caller's answer (first answer wins) and queue
    the `permission` command; (the permission, the command). PermissionNotFound for an
    unknown request; AlreadyResolved (details: the resolution that won) for one
    answered, expired or withdrawn before."""
    require_person(caller)
    now = clock()
    stamp = to_iso(now)
    with uow:
        locked = _locked_readable(uow, session_id, caller)
        expired = _expire_locked(uow, locked, now, settings)
        if uow.permissions.find(session_id, request_id) is None:
            raise PermissionNotFound(f"session {session_id} has no permission request {request_id}",
                                     {"session_id": session_id, "request_id": request_id})
        state = "allowed" if behavior == "allow" else "denied"
        if not uow.permissions.resolve_if_pending(session_id, request_id, state, message,
                                                  caller.name, stamp):
            won = uow.permissions.find(session_id, request_id)
            if expired:
                uow.commit()
            raise AlreadyResolved(f"permission request {request_id} was resolved before:"
                                  f" {won.state}", {"permission": resolution(won)})
        permission = uow.permissions.find(session_id, request_id)
        command = _resolve(uow, locked, permission, now, caller.name, settings)
        uow.commit()
    log.info("session %s: permission %s %s by %r", session_id, request_id, state, caller.name)
    return permission, command


def queue_control(session_id, kind, uow, *, caller=OPEN, clock=utc_now, settings=Settings()):
    """Queue an `interrupt` or `stop` command; a Queued. SessionClosed for a completed
    session; NotSupported when the attached runner does not offer it."""
    require_person(caller)
    now = clock()
    with uow:
        session = uow.sessions.get_for_update(session_id)
        if session is None or not caller.may_read(session):
            raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
        if session.is_completed:
            raise SessionClosed(f"session {session_id} is {session.status}",
                                {"session_id": session_id, "status": session.status})
        attached = check_offered(uow, session_id, kind, now, settings)
        body = {"requested_by": caller.name} if kind == "stop" else {}
        command = uow.commands.add(session_id, kind, body, caller.name, to_iso(now))
        uow.commit()
    log.info("session %s: %s requested by %r", session_id, kind, caller.name)
    return Queued(command, attached)


def check_offered(uow, session_id, kind, now, settings):
    """Whether a runner is attached; NotSupported when it is and does not offer the
    control a `kind` command needs. With none attached the command waits for one; a
    runner that reads its commands without having said what it offers (no POST
    .../runner) is taken to offer everything."""
    controls, seen_at, _ = uow.runners.presence(session_id)
    attached = seen_within(seen_at, now, settings.attached_seconds)
    control = CONTROL_OF[kind]
    if attached and controls is not None and control not in controls:
        raise NotSupported(f"the runner attached to session {session_id} does not offer"
                           f" `{control}` (its provider cannot, or it was not started"
                           " interactive)", {"control": control, "controls": controls or []})
    return attached


def expire_due(session_id, new_uow, *, now=None, clock=utc_now, settings=Settings()):
    """Deny, as `expired`, the session's pending requests whose time ran out, each with
    a deny command for the runner; how many. Race-free: a request answered meanwhile
    stays answered (resolve_if_pending)."""
    now = now or clock()
    with new_uow() as uow:
        if not uow.permissions.due_in_session(session_id, to_iso(now)):
            return 0
    with new_uow(write=True) as uow:
        locked = uow.sessions.lock_for_write(session_id)
        if locked is None:
            return 0
        expired = _expire_locked(uow, locked, now, settings)
        uow.commit()
    return expired


def _expire_locked(uow, locked, now, settings):
    sid = locked.session.session_id
    stamp = to_iso(now)
    expired = 0
    for due in uow.permissions.due_in_session(sid, stamp):
        if uow.permissions.resolve_if_pending(sid, due.request_id, "expired", EXPIRED_MESSAGE,
                                              None, stamp):
            _resolve(uow, locked, uow.permissions.find(sid, due.request_id), now, None, settings)
            expired += 1
            log.info("session %s: permission %s expired (denied)", sid, due.request_id)
    return expired


def _resolve(uow, locked, permission, now, created_by, settings):
    """Queue the runner's `permission` command and announce the resolution."""
    sid = permission.session_id
    body = {"request_id": permission.request_id, "behavior": behavior_of(permission.state),
            "message": permission.message, "state": permission.state}
    command = uow.commands.add(sid, "permission", body, created_by, to_iso(now))
    _announce(uow, locked, permission, now, settings)
    return command


def _announce(uow, locked, permission, now, settings):
    """Append the `turnlog.permission_resolved` line to the buffer and fold it as ingest
    does (no seq: the server wrote it). A completed session's buffer takes no more."""
    session = locked.session
    if session.is_completed:
        return
    line = json.dumps({"type": RESOLVED_LINE, **resolution(permission)}, separators=(",", ":"))
    stamp = to_iso(now)
    start = session.next_event_index
    stored = [StoredOutput(start, "stdout", line, None, stamp)]
    # (no permission timeout: the line resolves a request, it asks none)
    delta, live_events, turn_state = ingest.transcribe(uow, session, locked.turn_state, stored,
                                                       get_parser(session.provider), (now, stamp, 0))
    uow.outputs.add_many(session.session_id, stored, iso_after(now, settings.retention_seconds),
                         live_events)
    uow.sessions.record_ingest(session.session_id, start + 1, delta.messages, stamp,
                               turn_state=turn_state, max_seq=locked.max_seq,
                               new_turns=delta.turns, new_visible=delta.visible,
                               new_usage=delta.usage)


def _locked_readable(uow, session_id, caller):
    locked = uow.sessions.lock_for_write(session_id)
    if locked is None or not caller.may_read(locked.session):
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    return locked


def behavior_of(state):
    """What the agent is told: only an answer of `allow` allows."""
    return "allow" if state == "allowed" else "deny"


def resolution(permission):
    """How a request was resolved, as clients and the announcement line show it."""
    return {"request_id": permission.request_id, "state": permission.state,
            "behavior": behavior_of(permission.state), "message": permission.message,
            "resolved_by": permission.resolved_by, "resolved_at": permission.resolved_at}


def seen_within(seen_at, now, seconds):
    """True when a runner's last heartbeat `seen_at` is at most `seconds` before `now`."""
    return seen_at is not None and now - from_iso(seen_at) <= timedelta(seconds=seconds)


def controls_of(session, presence, now, settings=Settings()):
    """The session GET's `controls`: what can be done to the session right now, and why
    not. `presence` is (runner controls, runner_seen_at, stopped_by)."""
    offered, seen_at, _ = presence
    attached = seen_within(seen_at, now, settings.attached_seconds)
    view = {"runner_attached": attached, "runner_seen_at": seen_at}
    reasons = {}
    for control in CONTROLS:
        if session.is_completed:
            reasons[control] = f"the session is {session.status}"
        elif not attached:
            reasons[control] = ("no runner is attached to this session (what is sent waits for"
                                " one)")
        elif offered is not None and control not in offered:
            reasons[control] = "the attached runner does not offer it"
        view[control] = control not in reasons
    view["reasons"] = reasons
    return view


def describe(session, uow, *, clock=utc_now, settings=Settings()):
    """Fill the session GET's `pending_permissions`, `controls` and `stopped_by` on
    `session` (read by get_session, which checked the caller)."""
    with uow:
        presence = uow.runners.presence(session.session_id)
        session.pending_permissions = uow.permissions.list_pending(session.session_id)
    session.controls = controls_of(session, presence, clock(), settings)
    session.stopped_by = presence[2]
    return session
