"""At most N open live streams per token, and M per user (whichever of the user's
tokens holds them), counted across processes and instances.

Each open stream holds a lease row with an expiry; it renews the row while it
runs (every heartbeat) and deletes it when it closes, so a process that dies
leaves rows that lapse after `ttl_seconds`. Callers without a token (with
authentication off) are not limited.
"""
import math
import uuid
from dataclasses import dataclass

from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import TooManyStreams
from app.core.users import user_key
from app.services.quotas import day_of


@dataclass(frozen=True)
class Lease:
    lease_id: str
    token_id: int
    session_id: str
    user_key: str | None = None


def acquire(token_id, session_id, new_uow, *, limit, ttl_seconds, retry_after, clock=utc_now,
            user_id=None, user_limit=0):
    """A new Lease for one more stream of `token_id` (reading for `user_id`, when it is a
    user's); TooManyStreams when the token holds `limit`, or the user, through any of its
    tokens, `user_limit` (0: no per-user limit)."""
    now = clock()
    key = user_key(user_id) if user_limit else None
    wait = max(1, math.ceil(retry_after))
    with new_uow(write=True) as uow:
        uow.stream_leases.lock_token(token_id)
        held = uow.stream_leases.count_live(token_id, to_iso(now))
        if held >= limit:
            raise TooManyStreams(
                f"this token already has {held} open streams, the most it may hold at once;"
                " close one, or retry after a while (a closed stream is released within"
                " one heartbeat)",
                {"limit": limit, "open_streams": held}, retry_after=wait)
        if key is not None:
            uow.stream_leases.lock_user(key, day_of(now))
            held = uow.stream_leases.count_live_of_user(key, to_iso(now))
            if held >= user_limit:
                raise TooManyStreams(
                    f"user {user_id!r} already has {held} open streams across their tokens, the"
                    f" most a user may hold at once (TURNLOG_MAX_STREAMS_PER_USER); close one, or"
                    " retry after a while",
                    {"limit": user_limit, "open_streams": held, "user_id": user_id,
                     "scope": "user"}, retry_after=wait)
        lease = Lease(uuid.uuid4().hex, token_id, session_id, key)
        uow.stream_leases.add(lease.lease_id, token_id, session_id, iso_after(now, ttl_seconds),
                              user_key=key)
        uow.commit()
    return lease


def renew(lease, new_uow, *, ttl_seconds, clock=utc_now):
    """Push the lease's expiry `ttl_seconds` past now."""
    with new_uow(write=True) as uow:
        uow.stream_leases.renew(lease.lease_id, lease.token_id, lease.session_id,
                                iso_after(clock(), ttl_seconds), user_key=lease.user_key)
        uow.commit()


def release(lease, new_uow):
    """The stream has closed: its slot is free at once."""
    with new_uow(write=True) as uow:
        uow.stream_leases.delete(lease.lease_id)
        uow.commit()
