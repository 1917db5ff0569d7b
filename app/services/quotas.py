"""The per-user, per-day quotas (issue 29): output bytes accepted and sessions opened.

A user is counted under one spelling (`user_key`, app/core/users.py): whitespace stripped, case folded,
so "QUSER" and "quser " share their quotas. A day is a UTC calendar day; a refusal
says how many seconds remain until the next one, when the counters start again.
Each counter moves in the transaction that accepts the output or opens the session,
by one UPSERT that returns the new total: past the limit the use case raises, its
transaction rolls back, and the counter with it.
"""
import math
from dataclasses import dataclass
from datetime import datetime
from datetime import timedelta
from datetime import timezone

from app.core.errors import QuotaExceeded
from app.core.users import user_key


@dataclass(frozen=True)
class DayQuotas:
    """Limits per user per UTC day; 0 turns one off (its counter then stays still)."""

    output_bytes: int = 0
    sessions: int = 0


def day_of(now):
    """The UTC day of `now` as stored: YYYY-MM-DD."""
    return now.astimezone(timezone.utc).strftime("%Y-%m-%d")


def seconds_to_day_end(now):
    """Whole seconds (at least 1) until the UTC day of `now` ends."""
    now = now.astimezone(timezone.utc)
    start = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    return max(1, math.ceil((start + timedelta(days=1) - now).total_seconds()))


def count_output(uow, user_id, new_bytes, now, quotas):
    """Add `new_bytes` to the owner's output today; QuotaExceeded (nothing of the batch
    kept, once the caller's transaction rolls back) when that takes it past the limit."""
    key, limit = user_key(user_id), quotas.output_bytes
    if not limit or key is None:
        return
    total = uow.user_days.add_output(key, day_of(now), new_bytes)
    if total > limit:
        wait = seconds_to_day_end(now)
        raise QuotaExceeded(
            f"user {user_id!r} may write {limit} bytes of output a day"
            f" (TURNLOG_MAX_OUTPUT_BYTES_PER_USER_PER_DAY); today's sessions hold"
            f" {total - new_bytes} and this batch brings {new_bytes} more. Nothing of this"
            f" batch was stored; the day (UTC) ends in {wait} s",
            {"quota": "output_bytes_per_user_per_day", "limit": limit,
             "output_bytes": total - new_bytes, "batch_bytes": new_bytes, "user_id": user_id,
             "retry_after_seconds": wait},
            retry_after=wait)


def count_open(uow, user_id, now, quotas):
    """Count one more session opened today by its owner; QuotaExceeded past the limit."""
    key, limit = user_key(user_id), quotas.sessions
    if not limit or key is None:
        return
    total = uow.user_days.add_session(key, day_of(now))
    if total > limit:
        wait = seconds_to_day_end(now)
        raise QuotaExceeded(
            f"user {user_id!r} may open {limit} sessions a day"
            f" (TURNLOG_MAX_SESSIONS_PER_USER_PER_DAY) and has opened them today;"
            f" the day (UTC) ends in {wait} s",
            {"quota": "sessions_per_user_per_day", "limit": limit, "user_id": user_id,
             "retry_after_seconds": wait},
            retry_after=wait)
