"""At most N open live streams per token, counted across processes and instances.

Each open stream holds a lease row with an expiry; it renews the row while it
runs (every heartbeat) and deletes it when it closes, so a process that dies
leaves rows that lapse after `ttl_seconds`. Callers without a token (with
authentication off) are not limited.
"""
import math
import uuid
from dataclasses import dataclass

from app.services.clock import iso_after
from app.services.clock import to_iso
from app.services.clock import utc_now
from app.services.errors import TooManyStreams


@dataclass(frozen=True)
class Lease:
    lease_id: str
    token_id: int
    session_id: str


def acquire(token_id, session_id, new_uow, *, limit, ttl_seconds, retry_after, clock=utc_now):
    """A new Lease for one more stream of `token_id`; TooManyStreams when it holds `limit`."""
    now = clock()
    with new_uow(write=True) as uow:
        uow.stream_leases.lock_token(token_id)
        held = uow.stream_leases.count_live(token_id, to_iso(now))
        if held >= limit:
            raise TooManyStreams(
                f"this token already has {held} open streams, the most it may hold at once;"
                " close one, or retry after a while (a closed stream is released within"
                " one heartbeat)",
                {"limit": limit, "open_streams": held},
                retry_after=max(1, math.ceil(retry_after)))
        lease = Lease(uuid.uuid4().hex, token_id, session_id)
        uow.stream_leases.add(lease.lease_id, token_id, session_id, iso_after(now, ttl_seconds))
        uow.commit()
    return lease


def renew(lease, new_uow, *, ttl_seconds, clock=utc_now):
    """Push the lease's expiry `ttl_seconds` past now."""
    with new_uow(write=True) as uow:
        uow.stream_leases.renew(lease.lease_id, lease.token_id, lease.session_id,
                                iso_after(clock(), ttl_seconds))
        uow.commit()


def release(lease, new_uow):
    """The stream has closed: its slot is free at once."""
    with new_uow(write=True) as uow:
        uow.stream_leases.delete(lease.lease_id)
        uow.commit()
