"""Bearer tokens: issue one (its secret is shown once), recognise it, revoke it.

Only a SHA-256 of each token is stored. The tokens are 256 random bits, so a
fast hash is enough: there is nothing to guess that a slow hash would protect.
"""
import hashlib
import secrets

from app.providers.surrogates import has_unstorable
from app.services.access import RUNNER
from app.services.access import TOKEN_KINDS
from app.services.access import USER
from app.services.access import Caller
from app.services.clock import to_iso
from app.services.clock import utc_now
from app.services.errors import InvalidTokenName

# A prefix per kind makes a pasted token recognisable (and greppable in leaks).
PREFIXES = {RUNNER: "tlr_", USER: "tlu_"}
MAX_NAME = 200


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


def issue(kind, name, uow, *, is_admin=False, clock=utc_now):
    """Store a new token for a machine (runner) or a user; returns (id, secret)."""
    if kind not in TOKEN_KINDS:
        raise ValueError(f"unknown token kind {kind!r}")
    name = checked_name(name, InvalidTokenName)
    secret = PREFIXES[kind] + secrets.token_urlsafe(32)
    with uow:
        token_id = uow.tokens.add(kind, name, is_admin and kind != RUNNER, hash_token(secret),
                                  to_iso(clock()))
        uow.commit()
    return token_id, secret


def caller_for_secret(secret, uow):
    """The Caller a presented token stands for, or None when it is unknown or revoked."""
    with uow:
        record = uow.tokens.active_by_hash(hash_token(secret))
    return _caller(record)


def caller_for_id(token_id, uow):
    """The Caller of a token id (kept in a viewer's cookie), or None once revoked."""
    with uow:
        record = uow.tokens.active_by_id(token_id)
    return _caller(record)


def revoke(token_id, uow, *, clock=utc_now):
    """Revoke a token at once; False when no such unrevoked token exists."""
    with uow:
        done = uow.tokens.revoke(token_id, to_iso(clock()))
        uow.commit()
    return done


def list_tokens(uow):
    with uow:
        return uow.tokens.list_all()


def _caller(record):
    if record is None:
        return None
    return Caller(record.kind, record.name, is_admin=record.is_admin, token_id=record.id)
