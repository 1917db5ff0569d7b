"""How long to wait before retrying: exponential, jittered, and never less than Retry-After."""
import random

BASE_SECONDS = 0.25
CAP_SECONDS = 10.0


class Backoff:
    """Delays of BASE * 2**n, capped at CAP, each drawn from its upper half at random.

    The jitter keeps runners that lost the same server from coming back in step.
    `rng` is injectable so a test can seed it.
    """

    def __init__(self, base=BASE_SECONDS, cap=CAP_SECONDS, rng=None):
        self.base = base
        self.cap = cap
        self.rng = rng or random.Random()
        self.failures = 0

    def next_delay(self, retry_after=None):
        """The wait before the next try; at least `retry_after` when the server named one."""
        ceiling = min(self.cap, self.base * 2 ** self.failures)
        self.failures += 1
        delay = ceiling * (0.5 + self.rng.random() / 2)
        return max(delay, retry_after or 0.0)

    def reset(self):
        """A request went through: the next failure starts from the base again."""
        self.failures = 0
