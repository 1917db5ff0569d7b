"""app.client.backoff: exponential delays, jitter from a seeded generator, Retry-After."""
import random

from app.client.backoff import Backoff


def test_delays_double_up_to_the_cap_and_stay_in_the_upper_half_of_each_step():
    backoff = Backoff(base=0.25, cap=4.0, rng=random.Random(1))
    delays = [backoff.next_delay() for _ in range(8)]
    ceilings = [0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert all(ceiling / 2 <= delay <= ceiling for delay, ceiling in zip(delays, ceilings))
    assert len(set(delays)) == len(delays)  # jittered, not a fixed ladder


def test_the_same_seed_gives_the_same_delays_and_another_seed_others():
    def run(seed):
        backoff = Backoff(rng=random.Random(seed))
        return [backoff.next_delay() for _ in range(5)]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_retry_after_is_a_floor_and_reset_starts_from_the_base_again():
    backoff = Backoff(base=0.25, cap=10.0, rng=random.Random(2))
    assert backoff.next_delay(retry_after=7) == 7
    for _ in range(5):
        backoff.next_delay()
    assert backoff.next_delay() > 1.0
    backoff.reset()
    assert backoff.next_delay() <= 0.25
