"""Requests per token over a time window: a token bucket per key. Pure but for its lock.

Each key's bucket holds up to `requests` tokens and refills at `requests / window`
per second, so a client may burst up to the limit, then goes at the average rate.
The buckets live in the process: behind N workers the limit a client sees is up
to N times the setting (docs/deploy.md says so).
"""
import threading
import time


class RateLimiter:
    def __init__(self, requests, window_seconds, *, monotonic=time.monotonic, max_keys=100_000):
        self.capacity = float(requests)
        self.rate = requests / window_seconds if window_seconds > 0 else 0.0
        self._monotonic = monotonic
        self._max_keys = max_keys
        self._buckets = {}  # key -> (tokens, last refill time)
        self._lock = threading.Lock()

    @property
    def enabled(self):
        return self.capacity > 0 and self.rate > 0

    def acquire(self, key):
        """Take one request for `key`: (True, 0) if allowed, else (False, seconds to wait)."""
        if not self.enabled:
            return True, 0.0
        now = self._monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self._remember(key, tokens - 1, now)
                return True, 0.0
            self._remember(key, tokens, now)
            return False, (1 - tokens) / self.rate

    def _remember(self, key, tokens, now):
        if key not in self._buckets and len(self._buckets) >= self._max_keys:
            # Full buckets are the default state: forgetting them changes nothing.
            self._buckets = {k: (tokens_then, then)
                             for k, (tokens_then, then) in self._buckets.items()
                             if tokens_then + (now - then) * self.rate < self.capacity}
        self._buckets[key] = (tokens, now)
