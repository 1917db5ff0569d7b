"""A running session whose runner went silent reads `stale`, never stored, never live."""
from dataclasses import dataclass
from datetime import timedelta

from app.core.clock import from_iso
from app.core.liveness import is_stale
from app.core.liveness import last_sign
from app.core.liveness import shown_status
from app.services.sessions import mark_stale

WROTE = "2026-12-07T10:00:00.000000Z"
HEARD = "2026-12-07T10:01:30.000000Z"


@dataclass
class Row:
    status: str = "running"
    updated_at: str = WROTE
    runner_seen_at: str | None = None
    stale: bool = False


def at(seconds, since=WROTE):
    return from_iso(since) + timedelta(seconds=seconds)


def test_silent_past_the_limit_is_stale_and_not_before():
    assert not is_stale(Row(), at(120), 120)
    assert is_stale(Row(), at(120.5), 120)


def test_a_heartbeat_counts_as_much_as_a_write():
    heard = Row(runner_seen_at=HEARD)
    assert last_sign(heard) == HEARD
    assert not is_stale(heard, at(200), 120)
    assert is_stale(heard, at(121, since=HEARD), 120)
    assert last_sign(Row(updated_at=HEARD, runner_seen_at=WROTE)) == HEARD


def test_an_ended_session_is_never_stale():
    for status in ("completed", "failed"):
        assert not is_stale(Row(status=status), at(10_000), 120)


def test_the_status_shown_says_stale_and_the_stored_one_stays():
    rows = mark_stale([Row(), Row(updated_at=HEARD), Row(status="failed")], stale_seconds=60,
                      clock=lambda: at(100))
    assert [r.stale for r in rows] == [True, False, False]
    assert [shown_status(r) for r in rows] == ["stale", "running", "failed"]
    assert [r.status for r in rows] == ["running", "running", "failed"]
