"""When a batch of lines goes out: after 100 ms, or at 100 lines or 256 KiB, whichever
first; the first line after a quiet spell goes out after 10 ms.

The 100 ms clock bounds the posts of an agent that prints without pause (ten a second).
A line after a pause is most often the start of an answer someone waits for (the reply
to a prompt, the next turn), and it gets no company by waiting: a short clock lets the
lines printed with it (a burst) join it and sends them on. It never costs more posts
than one per pause."""
import time
from collections import deque

MAX_DELAY_SECONDS = 0.1
# The clock of a batch whose first line came after at least MAX_DELAY_SECONDS without one.
AFTER_QUIET_DELAY_SECONDS = 0.01
MAX_LINES = 100
MAX_BYTES = 256 * 1024


class Batcher:
    """Chunks waiting to be posted, oldest first, each with the time it arrived.

    The clock is an argument, so the rules are tested with a fake one.
    """

    def __init__(self, clock=time.monotonic, max_delay=MAX_DELAY_SECONDS,
                 max_lines=MAX_LINES, max_bytes=MAX_BYTES, after_quiet_delay=AFTER_QUIET_DELAY_SECONDS):
        self.clock = clock
        self.max_delay = max_delay
        self.after_quiet_delay = min(after_quiet_delay, max_delay)
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._waiting = deque()  # (arrived, chunk, size)
        self._bytes = 0
        self._last_arrival = None
        self._due_at = None  # when the oldest waiting line's batch is due

    def __len__(self):
        return len(self._waiting)

    def add(self, chunk):
        now = self.clock()
        size = len(chunk["data"].encode("utf-8", "surrogatepass"))
        if not self._waiting:
            quiet = self._last_arrival is None or now - self._last_arrival >= self.max_delay
            self._due_at = now + (self.after_quiet_delay if quiet else self.max_delay)
        self._waiting.append((now, chunk, size))
        self._bytes += size
        self._last_arrival = now

    def due(self):
        """A batch is full, or its clock has run out."""
        return self.wait_time() == 0.0

    def wait_time(self):
        """Seconds until a batch is due: 0.0 now, None while nothing waits."""
        if not self._waiting:
            return None
        if len(self._waiting) >= self.max_lines or self._bytes >= self.max_bytes:
            return 0.0
        return max(0.0, self._due_at - self.clock())

    def take(self):
        """The next batch: the oldest lines up to the limits (one line at least). Lines
        left behind keep the clock of their own arrival."""
        batch, size = [], 0
        while self._waiting and len(batch) < self.max_lines:
            _, chunk, chunk_size = self._waiting[0]
            if batch and size + chunk_size > self.max_bytes:
                break
            self._waiting.popleft()
            batch.append(chunk)
            size += chunk_size
        self._bytes -= size
        if self._waiting:
            self._due_at = self._waiting[0][0] + self.max_delay
        return batch
