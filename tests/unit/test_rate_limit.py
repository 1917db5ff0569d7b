"""The per-token rate limiter, on a fake clock."""
from app.services.rate_limit import RateLimiter


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_burst_up_to_the_limit_then_a_wait_of_one_refill():
    clock = FakeClock()
    limiter = RateLimiter(3, 60, monotonic=clock)
    assert [limiter.acquire("t")[0] for _ in range(3)] == [True, True, True]
    allowed, wait = limiter.acquire("t")
    assert allowed is False
    assert wait == 20.0  # 3 per 60 s: one request every 20 s
    clock.now += 20
    assert limiter.acquire("t") == (True, 0.0)
    assert limiter.acquire("t")[0] is False


def test_keys_do_not_share_a_bucket():
    limiter = RateLimiter(1, 60, monotonic=FakeClock())
    assert limiter.acquire("a")[0] and limiter.acquire("b")[0]
    assert not limiter.acquire("a")[0]


def test_a_bucket_never_holds_more_than_the_limit():
    clock = FakeClock()
    limiter = RateLimiter(2, 10, monotonic=clock)
    clock.now += 10_000
    assert [limiter.acquire("t")[0] for _ in range(3)] == [True, True, False]


def test_zero_turns_the_limit_off():
    limiter = RateLimiter(0, 60, monotonic=FakeClock())
    assert not limiter.enabled
    assert all(limiter.acquire("t")[0] for _ in range(1000))


def test_full_buckets_are_forgotten_when_the_table_is_full():
    clock = FakeClock()
    limiter = RateLimiter(5, 5, monotonic=clock, max_keys=2)
    limiter.acquire("a")
    limiter.acquire("b")
    clock.now += 60  # both refilled: nothing to remember about them
    limiter.acquire("c")
    assert set(limiter._buckets) == {"c"}
