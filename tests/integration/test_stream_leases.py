"""stream_leases on a real database: the per-token limit, expiry, renewal, release,
and the hub's marks read in one query."""
from datetime import datetime
from datetime import timedelta
from datetime import timezone

import pytest

from app import db
from app.core.errors import TooManyStreams
from app.services import tokens
from app.services.live import leases as stream_leases
from app.services.live.hub import Mark
from app.services.live.hub import marks_reader

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def new_uow(app):
    with app.app_context():
        yield db.detached_units_of_work()


@pytest.fixture
def token_id(new_uow, rows):
    tokens.issue("user", "alice", new_uow(write=True))
    return rows("SELECT MAX(id) FROM agent_tokens")[0][0]


def acquire(token_id, new_uow, at=T0, limit=2):
    return stream_leases.acquire(token_id, "s1", new_uow, limit=limit, ttl_seconds=30,
                                 retry_after=15, clock=lambda: at)


def test_the_next_stream_over_the_limit_is_refused_with_a_retry_delay(token_id, new_uow, rows):
    acquire(token_id, new_uow)
    acquire(token_id, new_uow)
    with pytest.raises(TooManyStreams) as refused:
        acquire(token_id, new_uow)
    assert refused.value.details == {"limit": 2, "open_streams": 2}
    assert refused.value.retry_after == 15
    assert rows("SELECT COUNT(*) FROM stream_leases WHERE token_id = ?", token_id) == [(2,)]


def test_a_released_lease_frees_its_slot_at_once(token_id, new_uow, rows):
    first = acquire(token_id, new_uow)
    acquire(token_id, new_uow)
    stream_leases.release(first, new_uow)
    acquire(token_id, new_uow)
    assert rows("SELECT COUNT(*) FROM stream_leases") == [(2,)]


def test_an_expired_lease_no_longer_counts_and_a_renewed_one_does(token_id, new_uow, rows):
    kept = acquire(token_id, new_uow)
    acquire(token_id, new_uow)  # its process died: never renewed
    later = T0 + timedelta(seconds=20)
    stream_leases.renew(kept, new_uow, ttl_seconds=30, clock=lambda: later)
    acquire(token_id, new_uow, at=T0 + timedelta(seconds=40))  # the dead one lapsed at 30 s
    with pytest.raises(TooManyStreams):
        acquire(token_id, new_uow, at=T0 + timedelta(seconds=40))
    assert rows("SELECT COUNT(*) FROM stream_leases") == [(2,)]


def test_a_lease_cleared_while_its_process_stalled_comes_back_on_renewal(token_id, new_uow, rows):
    lease = acquire(token_id, new_uow)
    rows("DELETE FROM stream_leases")
    stream_leases.renew(lease, new_uow, ttl_seconds=30, clock=lambda: T0)
    assert rows("SELECT lease_id, session_id FROM stream_leases") == [(lease.lease_id, "s1")]


def test_marks_of_several_sessions_come_from_one_read(new_session, feed, complete, new_uow):
    running, done = new_session(), new_session()
    feed(running, ["a", "b"])
    complete(done)
    marks = marks_reader(new_uow)([running, done, "missing", "nul\x00id"])
    assert marks == {running: Mark(2, False), done: Mark(0, True)}


def test_a_user_s_streams_are_counted_across_tokens_and_spellings(new_uow, rows):
    ids = []
    for name in ("alice", "ALICE ", "bob"):
        tokens.issue("user", name, new_uow(write=True))
        ids.append(rows("SELECT MAX(id) FROM agent_tokens")[0][0])

    def open_for(token_id, user_id, at=T0):
        return stream_leases.acquire(token_id, "s1", new_uow, limit=5, ttl_seconds=30,
                                     retry_after=15, clock=lambda: at, user_id=user_id,
                                     user_limit=2)

    open_for(ids[0], "alice")
    lease = open_for(ids[1], "ALICE ")
    with pytest.raises(TooManyStreams) as refused:
        open_for(ids[0], "alice")
    assert refused.value.details["scope"] == "user" and refused.value.details["open_streams"] == 2
    open_for(ids[2], "bob")  # another user
    assert rows("SELECT user_key, COUNT(*) FROM stream_leases GROUP BY user_key ORDER BY user_key") == [
        ("alice", 2), ("bob", 1)]
    stream_leases.renew(lease, new_uow, ttl_seconds=30, clock=lambda: T0)
    stream_leases.release(lease, new_uow)
    open_for(ids[0], "alice")  # a released slot is free again
    # expired leases of the user are not counted
    open_for(ids[1], "alice", at=T0 + timedelta(minutes=5))
