"""Session use cases: open one, read one, list them, page through a transcript."""
import base64
import binascii
import logging
import math
import uuid
from dataclasses import dataclass
from datetime import timedelta

from app.core import command_line
from app.core.clock import from_iso
from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import InvalidCursor
from app.core.errors import InvalidMachine
from app.core.errors import NotPermitted
from app.core.errors import QuotaExceeded
from app.core.errors import SessionNotFound
from app.core.liveness import is_stale
from app.core.records import Page
from app.services import quotas as day_quotas
from app.services import tokens
from app.services.access import OPEN
from app.services.access import RUNNER
from app.services.access import USER
from app.transcript.open_turn import has_open_turn
from app.transcript.open_turn import open_turn

log = logging.getLogger(__name__)

# Message ids are signed 64-bit integers; a larger cursor cannot be bound.
MAX_MESSAGE_ID = 2**63 - 1


@dataclass(frozen=True)
class OpenQuotas:
    """Limits on opening sessions; 0 turns one off. Users are compared as
    users.user_key() spells them ("QUSER" and "quser " are one user)."""

    per_token_per_minute: int = 0
    open_per_user: int = 0
    per_user_per_day: int = 0


QUOTA_WINDOW_SECONDS = 60
# What a user at their open-sessions limit is told to wait: sessions end when their
# runners complete them, which no clock here can predict.
OPEN_SESSIONS_RETRY_SECONDS = 30


def open_session(data, uow, *, caller=OPEN, clock=utc_now, quotas=OpenQuotas(),
                 token_lifetime_seconds=0):
    """Create a running session from validated fields; returns it.

    A user opens sessions for themselves (an admin for anyone); a runner opens
    them on its own machine, for an owner its token is scoped to, and gets the
    session's own write token with it (`write_token`), which expires
    `token_lifetime_seconds` later (0: never) unless writes renew it. Past a quota,
    QuotaExceeded.
    """
    owner, machine = _owner_and_machine(data, caller)
    session_id = str(uuid.uuid4())
    now = clock()
    with uow:
        if caller.token_id is not None:
            uow.tokens.lock(caller.token_id)  # opens of one token are counted one at a time
        # The day's counter row, once moved, holds the opens of one user (by any token)
        # one at a time too, so the running-sessions count below is theirs alone.
        # (Locks are taken token first, then user, as stream leases take them.)
        day_quotas.count_open(uow, owner, now, day_quotas.DayQuotas(sessions=quotas.per_user_per_day))
        if caller.token_id is not None:
            _check_open_quotas(uow, caller, owner, now, quotas)
        uow.sessions.add(
            session_id,
            owner,
            data["session_type"],
            data.get("context") or {},
            data.get("provider") or "claude",
            to_iso(now),
            machine=machine,
            opened_by_token=caller.token_id,
            # redacted again here: a client other than turnlog run may have sent them
            command=None if data.get("command") is None else command_line.redacted(data["command"]),
            first_prompt=command_line.prompt_text(data.get("prompt")),
        )
        session = uow.sessions.get(session_id)
        if caller.kind == RUNNER:
            expires_at = iso_after(now, token_lifetime_seconds) if token_lifetime_seconds else None
            session.write_token = tokens.issue_session_token(uow, session, caller, to_iso(now),
                                                             expires_at=expires_at)
        uow.commit()
    log.info("session %s opened: %s, provider %s, owner %r, machine %r", session_id,
             session.session_type, session.provider, session.user_id, session.machine)
    return session


def assign_machine(session_id, machine, uow, *, clock=utc_now):
    """Let the runner tokens of `machine` write the session (an operator's command).

    Sessions from before migration 0008, and those a user opened without naming a
    machine, have none and refuse every runner until they get one. Returns
    (the machine it had, the session now).
    """
    machine = tokens.checked_name(machine, InvalidMachine, "machine")
    with uow:
        session = uow.sessions.get_for_update(session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
        uow.sessions.assign_machine(session_id, machine, to_iso(clock()))
        assigned = uow.sessions.get(session_id)
        uow.commit()
    return session.machine, assigned


def get_session(session_id, uow, *, caller=OPEN, max_messages=None, max_bytes=0):
    """The session with its transcript, in write order, and its open turn.

    With `max_messages`, only that many of the oldest messages, and (with `max_bytes`)
    no more than fit in that many bytes as stored (the first always comes): when
    there are more, `messages_truncated` is set and `messages_next_cursor` continues
    on the messages endpoint (list_messages) after the last one returned.
    """
    with uow:
        session = readable_session(uow, session_id, caller)
        if max_messages is None:
            session.messages = uow.messages.list_all(session_id)
        else:
            first, cut = uow.messages.sized_page(session_id, 0, max_messages + 1, max_bytes)
            session.messages = first[:max_messages]
            if len(first) > max_messages or cut:
                session.messages_truncated = True
                session.messages_next_cursor = str(session.messages[-1].id)
        snapshot = uow.turn_states.load(session_id)
        if has_open_turn(snapshot):
            session.open_turn = open_turn(snapshot, uow.turn_states.load_parts(session_id))
        session.pending_inputs = uow.inputs.list_pending(session_id)
    return session


def get_session_tail(session_id, uow, *, caller=OPEN, max_messages, max_bytes=0,
                     with_openers=False):
    """The session with its newest `max_messages` messages (in write order; with
    `max_bytes`, no more than fit in that many bytes as stored, the newest always) and
    its open turn: what the viewer shows first. `messages_truncated` is set when older
    ones exist, and `messages_prev_cursor` (the first one's id) pages back with
    list_messages_before. `with_openers`: its `openers` too (list_sessions)."""
    with uow:
        session = readable_session(uow, session_id, caller)
        if with_openers:
            session.openers = uow.messages.openers([session_id]).get(session_id, [])
        newest, cut = uow.messages.sized_before(session_id, MAX_MESSAGE_ID, max_messages + 1,
                                                max_bytes)
        session.messages = newest[-max_messages:] if max_messages else []
        if len(newest) > max_messages or cut:
            session.messages_truncated = True
            session.messages_prev_cursor = str(session.messages[0].id) if session.messages else None
        snapshot = uow.turn_states.load(session_id)
        if has_open_turn(snapshot):
            session.open_turn = open_turn(snapshot, uow.turn_states.load_parts(session_id))
    return session


def list_messages_before(session_id, uow, *, before, limit, caller=OPEN, max_bytes=0):
    """The `limit` messages just before message `before`, in write order (with
    `max_bytes`, no more than fit in that many bytes as stored, the newest always);
    the page's cursor (its first id) is set when still older ones exist."""
    before_id = _int_cursor(before) or MAX_MESSAGE_ID
    with uow:
        readable_session(uow, session_id, caller)
        items, cut = uow.messages.sized_before(session_id, before_id, limit + 1, max_bytes)
    older = len(items) > limit or cut
    items = items[-limit:]
    return Page(items, str(items[0].id) if older and items else None)


def get_session_summary(session_id, uow, *, caller=OPEN, with_open_turn=False,
                        with_openers=False):
    """The session's row (status and counters) without its transcript; with its
    `open_turn` and its `openers` (list_sessions) too when asked."""
    with uow:
        session = readable_session(uow, session_id, caller)
        if with_openers:
            session.openers = uow.messages.openers([session_id]).get(session_id, [])
        if with_open_turn:
            snapshot = uow.turn_states.load(session_id)
            if has_open_turn(snapshot):
                session.open_turn = open_turn(snapshot, uow.turn_states.load_parts(session_id))
    return session


def list_messages(session_id, uow, *, after=None, limit, caller=OPEN, max_bytes=0):
    """One keyset page of the transcript, of at most `limit` messages and (with
    `max_bytes`) no more than fit in that many bytes as stored, the first always; the
    cursor is the last message id seen."""
    after_id = _int_cursor(after)
    with uow:
        readable_session(uow, session_id, caller)
        items, cut = uow.messages.sized_page(session_id, after_id, limit, max_bytes)
    cursor = str(items[-1].id) if items and (len(items) == limit or cut) else None
    return Page(items, cursor)


def iter_message_pages(session_id, new_uow, *, limit, max_bytes):
    """The session's whole transcript in write order, one page (`limit` messages, no
    more than `max_bytes` as stored, the first always) per read transaction of its own
    (`new_uow()`): what an export streams, holding one page at a time however long the
    session. The caller checks first that the session may be read (get_session_summary);
    messages written while the pages are read come too, in order."""
    after = 0
    while True:
        with new_uow() as uow:
            items, cut = uow.messages.sized_page(session_id, after, limit, max_bytes)
        if not items:
            return
        yield items
        if len(items) < limit and not cut:
            return
        after = items[-1].id


def list_sessions(uow, *, cursor=None, limit, caller=OPEN, with_openers=False):
    """The sessions `caller` may read, newest first, one keyset page at a time.

    `with_openers`: each session's `messages` holds its opening rows only (its
    first init note and first assistant row with text, content cut short), what
    a list needs to title it; read in the same transaction.
    """
    before = _decode_session_cursor(cursor) if cursor else None
    with uow:
        items = uow.sessions.list_page(limit, before, owner=caller.owner_scope)
        if with_openers and items:
            openers = uow.messages.openers([s.session_id for s in items])
            for session in items:
                session.messages = openers.get(session.session_id, [])
    next_cursor = _encode_session_cursor(items[-1]) if len(items) == limit else None
    return Page(items, next_cursor)


def mark_stale(sessions, *, stale_seconds, clock=utc_now):
    """Set `stale` on each running session whose runner has been silent longer than
    `stale_seconds` (app/core/liveness.py); returns `sessions`."""
    now = clock()
    for session in sessions:
        session.stale = is_stale(session, now, stale_seconds)
    return sessions


def readable_session(uow, session_id, caller):
    """The session, if it exists and `caller` may read it; else SessionNotFound.

    Another user's session is "not found", not "forbidden": its existence is
    none of the caller's business.
    """
    session = uow.sessions.get(session_id)
    if session is None or not caller.may_read(session):
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    return session


def _check_open_quotas(uow, caller, owner, now, quotas):
    limit = quotas.per_token_per_minute
    if limit:
        count, oldest = uow.sessions.opened_since(
            caller.token_id, to_iso(now - timedelta(seconds=QUOTA_WINDOW_SECONDS)))
        if count >= limit:
            frees_at = from_iso(oldest) + timedelta(seconds=QUOTA_WINDOW_SECONDS)
            wait = max(1, math.ceil((frees_at - now).total_seconds()))
            raise QuotaExceeded(
                f"this token opened {count} sessions in the last minute; the limit is {limit}"
                f" a minute (TURNLOG_SESSIONS_PER_TOKEN_PER_MINUTE). Retry in {wait} s",
                {"quota": "sessions_per_token_per_minute", "limit": limit, "retry_after_seconds": wait},
                retry_after=wait)
    limit = quotas.open_per_user
    if limit and owner is not None:
        running = uow.sessions.running_of_user(owner)
        if running >= limit:
            raise QuotaExceeded(
                f"user {owner!r} has {running} sessions running; the limit is {limit}"
                " (TURNLOG_MAX_OPEN_SESSIONS_PER_USER). Complete one first",
                {"quota": "open_sessions_per_user", "limit": limit, "user_id": owner,
                 "retry_after_seconds": OPEN_SESSIONS_RETRY_SECONDS},
                retry_after=OPEN_SESSIONS_RETRY_SECONDS)


def _owner_and_machine(data, caller):
    owner, machine = data.get("user_id"), data.get("machine")
    if caller.kind == RUNNER:
        if caller.is_session_token:
            raise NotPermitted("a session's write token writes that session only; open"
                               " sessions with the runner's own token",
                               {"token_session_id": caller.session_id})
        if machine not in (None, caller.name):
            raise NotPermitted("a runner opens sessions on its own machine only",
                               {"machine": machine, "token_machine": caller.name})
        if caller.users is not None:
            if owner is None and len(caller.users) == 1:
                owner = caller.users[0]
            if not caller.may_serve(owner):
                raise NotPermitted(
                    f"this runner token opens sessions for {', '.join(map(repr, caller.users))}"
                    f" only, not for {owner!r}; an operator can issue one with"
                    " `create-runner-token --machine M --user U`",
                    {"user_id": owner, "token_users": list(caller.users)})
        return owner, caller.name
    if caller.kind == USER and not caller.is_admin:
        if owner not in (None, caller.name):
            raise NotPermitted("a user opens sessions for themselves only",
                               {"user_id": owner, "token_user": caller.name})
        return caller.name, machine
    return owner, machine


def _int_cursor(after):
    if after in (None, ""):
        return 0
    try:
        value = int(after)
    except ValueError:
        raise InvalidCursor("cursor must be a message id", {"after": after}) from None
    if value < 0:
        raise InvalidCursor("cursor must not be negative", {"after": after})
    if value > MAX_MESSAGE_ID:
        raise InvalidCursor("cursor is larger than any message id", {"after": after})
    return value


def _encode_session_cursor(session):
    raw = f"{session.created_at}|{session.session_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_session_cursor(cursor):
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, session_id = raw.split("|", 1)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor("malformed sessions cursor", {"cursor": cursor}) from None
    return created_at, session_id
