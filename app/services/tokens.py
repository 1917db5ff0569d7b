"""Bearer tokens: issue one (its secret is shown once), recognise it, revoke it.

Only a SHA-256 of each token is stored. The tokens are 256 random bits, so a
fast hash is enough: there is nothing to guess that a slow hash would protect.
"""
import dataclasses
import hashlib
import secrets

from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import InvalidTokenName
from app.providers.surrogates import has_unstorable
from app.services.access import RUNNER
from app.services.access import TOKEN_KINDS
from app.services.access import USER
from app.services.access import Caller

# A prefix per kind makes a pasted token recognisable (and greppable in leaks).
PREFIXES = {RUNNER: "tlr_", USER: "tlu_"}
MAX_NAME = 200
# A session write token is renewed by a write once this much of its lifetime has
# passed (a tenth of it, when that is shorter).
RENEW_EVERY_SECONDS = 600


def checked_name(name, error, what="name"):
    """`name` stripped; `error` (a ServiceError) when that is empty, longer than MAX_NAME
    or not storable text. A runner token's name is its machine, so a session's machine
    (sessions.assign_machine) follows the same rule."""
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME or has_unstorable(name):
        raise error(f"the {what} must be 1 to {MAX_NAME} characters of text"
                    " (no NUL, no lone surrogate)", {what: name})
    return name


def hash_token(secret):
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def issue(kind, name, uow, *, is_admin=False, users=None, expires_in=None, clock=utc_now):
    """Store a new token for a machine (runner) or a user; returns (id, secret).

    A runner token with `users` opens and writes sessions for those users only (None:
    any user); with `expires_in` (seconds) it stops working that long from now.
    """
    if kind not in TOKEN_KINDS:
        raise ValueError(f"unknown token kind {kind!r}")
    name = checked_name(name, InvalidTokenName)
    if users is not None:
        if kind != RUNNER:
            raise ValueError("only runner tokens are scoped to users")
        users = tuple(dict.fromkeys(checked_name(user, InvalidTokenName, "user") for user in users))
        if not users:
            raise InvalidTokenName("a scoped runner token needs at least one user", {"users": []})
    now = clock()
    expires_at = None if expires_in is None else iso_after(now, expires_in)
    secret = new_secret(kind)
    with uow:
        token_id = uow.tokens.add(kind, name, is_admin and kind != RUNNER, hash_token(secret),
                                  to_iso(now), allowed_users=users, expires_at=expires_at)
        uow.commit()
    return token_id, secret


def new_secret(kind):
    return PREFIXES[kind] + secrets.token_urlsafe(32)


def issue_session_token(uow, session, caller, now, *, expires_at=None):
    """A write token for `session` alone, in the caller's transaction; returns its secret.

    It stands for the runner that opened the session (same machine and scope) and
    works only while that runner's token does and the session stays on its machine
    (the repository's lookups check both). It expires at `expires_at` (None: never),
    a time its writes push on (`renew_session_token`), and when the session
    completes, plus a grace period (see `expire_session_tokens`).
    """
    secret = new_secret(RUNNER)
    uow.tokens.add(RUNNER, caller.name, False, hash_token(secret), now,
                   allowed_users=(session.user_id,), expires_at=expires_at,
                   session_id=session.session_id)
    return secret


def renew_session_token(uow, caller, now, lifetime_seconds):
    """Push a session write token's expiry to `lifetime_seconds` after `now`, in the
    caller's write transaction, when it came with one (a runner's own token, or none,
    is left alone). Renewed at most every RENEW_EVERY of its lifetime, so a runner
    writing steadily costs one UPDATE per that long, not one per request. A token from
    before expiring write tokens (no expiry) gets its first here."""
    if not caller.is_session_token or not lifetime_seconds:
        return False
    renewed_at = iso_after(now, lifetime_seconds - renew_every(lifetime_seconds))
    if caller.expires_at is not None and caller.expires_at >= renewed_at:
        return False
    uow.tokens.renew(caller.token_id, iso_after(now, lifetime_seconds))
    return True


def renew_every(lifetime_seconds):
    """How much of a write token's lifetime may pass before a write renews it."""
    return min(RENEW_EVERY_SECONDS, lifetime_seconds / 10)


def caller_for_secret(secret, uow, *, clock=utc_now):
    """The Caller a presented token stands for, or None when it is unknown, revoked or expired."""
    with uow:
        record = uow.tokens.active_by_hash(hash_token(secret), to_iso(clock()))
    return _caller(record)


def caller_for_id(token_id, uow, *, clock=utc_now):
    """The Caller of a token id, or None once it is revoked or expired."""
    with uow:
        record = uow.tokens.active_by_id(token_id, to_iso(clock()))
    return _caller(record)


def still_valid(caller, uow, *, clock=utc_now):
    """True while the credentials `caller` came with still work: its sign-in, if it came
    with the viewer's cookie, and its token. A long stream asks this now and then."""
    if caller.viewer_key_hash is not None:
        return caller_for_viewer(caller.viewer_key_hash, uow, clock=clock, hashed=True) is not None
    return caller_for_id(caller.token_id, uow, clock=clock) is not None


def sign_in(token_id, uow, *, lifetime_seconds, clock=utc_now):
    """Start a viewer sign-in for a user token; returns the cookie's key (kept only as a hash)."""
    key = secrets.token_urlsafe(32)
    now = clock()
    with uow:
        uow.tokens.delete_expired_viewer_sessions(to_iso(now))
        uow.tokens.add_viewer_session(hash_token(key), token_id, to_iso(now),
                                      iso_after(now, lifetime_seconds))
        uow.commit()
    return key


def caller_for_viewer(key, uow, *, clock=utc_now, hashed=False):
    """The Caller of a live sign-in (the cookie's key), or None once it is signed out,
    expired, or its token revoked."""
    key_hash = key if hashed else hash_token(key)
    with uow:
        record = uow.tokens.viewer_token(key_hash, to_iso(clock()))
    caller = _caller(record)
    return None if caller is None else dataclasses.replace(caller, viewer_key_hash=key_hash)


def sign_out(key, uow, *, clock=utc_now):
    """End a viewer sign-in at once: every copy of its cookie stops working."""
    with uow:
        done = uow.tokens.revoke_viewer_session(hash_token(key), to_iso(clock()))
        uow.commit()
    return done


def revoke(token_id, uow, *, clock=utc_now):
    """Revoke a token at once; False when no such unrevoked token exists."""
    with uow:
        done = uow.tokens.revoke(token_id, to_iso(clock()))
        uow.commit()
    return done


def list_tokens(uow):
    """Every token by id, each session write token right after the runner token that
    opened its session (one whose runner token is not known keeps its own place)."""
    with uow:
        records = uow.tokens.list_all()
    known = {record.id for record in records}
    children = {}
    for record in records:
        if record.session_id is not None and record.parent_id in known:
            children.setdefault(record.parent_id, []).append(record)
    listing = []
    for record in records:
        if record.session_id is None or record.parent_id not in known:
            listing.append(record)
            listing.extend(children.get(record.id, ()))
    return listing


def stopped_by_parent(record, parent, now):
    """True when a session write token no longer works because its runner token
    (`parent`, None: not known) is revoked or expired at `now` (stored text)."""
    if record.session_id is None or parent is None:
        return False
    return parent.revoked_at is not None or (parent.expires_at is not None
                                             and parent.expires_at <= now)


def _caller(record):
    if record is None:
        return None
    return Caller(record.kind, record.name, is_admin=record.is_admin, token_id=record.id,
                  users=record.allowed_users, session_id=record.session_id,
                  expires_at=record.expires_at)
