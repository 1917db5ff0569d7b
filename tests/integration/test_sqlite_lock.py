"""retry_busy: a reader waits out SQLITE_BUSY in Python, for its timeout and no longer (no
database: errors of the driver, a clock and sleeps that are fakes)."""
import sqlite3

import pytest

from app.storage.sqlite_lock import is_busy
from app.storage.sqlite_lock import retry_busy


class Clock:
    """A monotonic clock that moves only when slept on."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def monotonic(self):
        return self.now


def busy(code=sqlite3.SQLITE_BUSY):
    err = sqlite3.OperationalError("database is locked")
    err.sqlite_errorcode = code
    return err


def failing(times, error):
    calls = []

    def attempt():
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "read"
    return attempt, calls


def test_a_lock_that_goes_within_the_timeout_is_waited_out():
    clock = Clock()
    attempt, calls = failing(5, busy())
    assert retry_busy(attempt, 2.0, sleep=clock.sleep, monotonic=clock.monotonic) == "read"
    assert len(calls) == 6
    assert clock.sleeps == [0.001, 0.002, 0.004, 0.008, 0.016]  # backing off, in Python


def test_an_extended_busy_code_is_busy_too():
    assert is_busy(busy(sqlite3.SQLITE_BUSY | (1 << 8)))  # SQLITE_BUSY_RECOVERY
    assert not is_busy(busy(sqlite3.SQLITE_LOCKED))


def test_a_lock_held_past_the_timeout_raises_after_one_last_try():
    clock = Clock()
    attempt, calls = failing(10**6, busy())
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        retry_busy(attempt, 2.0, sleep=clock.sleep, monotonic=clock.monotonic)
    assert clock.now == pytest.approx(2.0)
    assert max(clock.sleeps) == 0.05
    assert len(calls) == len(clock.sleeps) + 1


def test_other_errors_are_not_retried():
    clock = Clock()
    attempt, calls = failing(1, sqlite3.OperationalError("no such table: t"))
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_busy(attempt, 2.0, sleep=clock.sleep, monotonic=clock.monotonic)
    assert (len(calls), clock.sleeps) == (1, [])


def test_a_zero_timeout_tries_once():
    clock = Clock()
    attempt, calls = failing(1, busy())
    with pytest.raises(sqlite3.OperationalError):
        retry_busy(attempt, 0, sleep=clock.sleep, monotonic=clock.monotonic)
    assert len(calls) == 1
