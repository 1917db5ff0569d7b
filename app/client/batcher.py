"""When a batch of lines goes out: after 100 ms, or at 100 lines or 256 KiB, whichever first."""
import time
from collections import deque

MAX_DELAY_SECONDS = 0.1
MAX_LINES = 100
MAX_BYTES = 256 * 1024


class Batcher:
    """Chunks waiting to be posted, oldest first, each with the time it arrived.

    The clock is an argument, so the rules are tested with a fake one.
    """

    def __init__(self, clock=time.monotonic, max_delay=MAX_DELAY_SECONDS,
                 max_lines=MAX_LINES, max_bytes=MAX_BYTES):
        self.clock = clock
        self.max_delay = max_delay
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._waiting = deque()  # (arrived, chunk, size)
        self._bytes = 0

    def __len__(self):
        return len(self._waiting)

    def add(self, chunk):
        size = len(chunk["data"].encode("utf-8", "surrogatepass"))
        self._waiting.append((self.clock(), chunk, size))
        self._bytes += size

    def due(self):
        """A batch is full, or its oldest line has waited `max_delay`."""
        return self.wait_time() == 0.0

    def wait_time(self):
        """Seconds until a batch is due: 0.0 now, None while nothing waits."""
        if not self._waiting:
            return None
        if len(self._waiting) >= self.max_lines or self._bytes >= self.max_bytes:
            return 0.0
        return max(0.0, self._waiting[0][0] + self.max_delay - self.clock())

    def take(self):
        """The next batch: the oldest lines up to the limits (one line at least)."""
        batch, size = [], 0
        while self._waiting and len(batch) < self.max_lines:
            _, chunk, chunk_size = self._waiting[0]
            if batch and size + chunk_size > self.max_bytes:
                break
            self._waiting.popleft()
            batch.append(chunk)
            size += chunk_size
        self._bytes -= size
        return batch
