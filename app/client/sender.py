"""Posting with retries: what is retried, what is split, and what stops the run.

Connection errors, 5xx and 429 are retried with the backoff, waiting at least the
server's Retry-After; while it waits the runner keeps reading and spooling the
child (`idle`). A 413 for the request's size splits the batch in halves; a line
too long for the server, or a session out of room, is named and ends the run, as
does every other 4xx, with a message that says which token, machine or field.

A batch is never posted for ever: when the same batch (same first and last seq) has
failed on the server `max_batch_failures` times in a row (an answer of 500, 502, 504
or any 5xx but 503, a dropped connection, a timeout: the request reached a server that
died or failed on it), the run gives it up (BatchGivenUp). A server that is not there
(connection refused) or says it is busy (503, 429) neither counts nor resets the count:
that is waiting, not failing.
"""
import sys
import time

from app.client.backoff import Backoff
from app.client.errors import ApiError
from app.client.errors import BatchGivenUp
from app.client.errors import Misconfigured
from app.client.errors import RunnerFailed
from app.client.errors import Unreachable

SPLITTABLE = {"request_entity_too_large", "too_many_chunks", "session_output_limit"}
# Failures on the server in a row of one batch before the run gives it up (with the
# backoff, ~3 s of retries when each fails at once; 5 worker timeouts when each hangs).
MAX_BATCH_FAILURES = 5


class Sender:
    def __init__(self, backoff=None, idle=None, log=None, token_name="runner token",
                 max_batch_failures=MAX_BATCH_FAILURES):
        self.backoff = backoff or Backoff()
        self.idle = idle or time.sleep  # idle(seconds): wait, doing useful work meanwhile
        self.log = log or (lambda text: print(f"turnlog: {text}", file=sys.stderr, flush=True))
        self.token_name = token_name
        self.max_batch_failures = max_batch_failures
        self.failures = 0
        self._failing = None  # (batch, failures on the server in a row, their reasons)

    def retrying(self, what, call, splittable=False, batch=None):
        """call() until it succeeds or fails for good (RunnerFailed; _TooBig when
        `splittable` and the server says the request is too big; BatchGivenUp when
        `batch`, a (first seq, last seq), failed on the server too many times in a row)."""
        while True:
            try:
                result = call()
            except Unreachable as err:
                if err.reached:
                    self._failed_on_server(what, batch, "no answer (connection dropped or timed out)")
                self._wait(what, str(err), None)
                continue
            except ApiError as err:
                if splittable and err.code in SPLITTABLE:
                    raise _TooBig() from err
                if not err.transient:
                    raise RunnerFailed(self.explain(what, err)) from None
                if err.status >= 500 and err.status != 503:
                    self._failed_on_server(what, batch, f"{err.status} {err.code}")
                self._wait(what, f"{err.status} {err.code}", err.retry_after)
                continue
            if self.failures:
                self.log(f"{what}: went through after {self.failures} failed tries")
            self.failures = 0
            self._failing = None
            self.backoff.reset()
            return result

    def _failed_on_server(self, what, batch, reason):
        """Count one more failure of `batch` on the server; give it up at the limit."""
        if batch is None:
            return
        if self._failing is None or self._failing[0] != batch:
            self._failing = (batch, 0, [])
        _, count, reasons = self._failing
        count += 1
        if reason not in reasons:
            reasons.append(reason)
        self._failing = (batch, count, reasons)
        if count >= self.max_batch_failures:
            self._failing = None
            raise BatchGivenUp(
                f"{what}: gave up on the batch of seqs {batch[0]}..{batch[1]} after it failed on"
                f" the server {count} times in a row ({'; '.join(reasons)}); posting it again"
                " would fail again (a server error, or a worker killed while ingesting it):"
                " see the server's log") from None

    def send(self, client, session_id, batch):
        """Post one batch, split in halves as long as the server finds it too big."""
        try:
            return self.retrying("posting output", lambda: client.post_output(session_id, batch),
                                 splittable=len(batch) > 1,
                                 batch=(batch[0]["seq"], batch[-1]["seq"]))
        except _TooBig:
            pass
        half = len(batch) // 2
        self.send(client, session_id, batch[:half])
        return self.send(client, session_id, batch[half:])

    def _wait(self, what, reason, retry_after):
        self.failures += 1
        delay = self.backoff.next_delay(retry_after)
        if self.failures == 1 or self.failures % 10 == 0:
            self.log(f"{what}: {reason}; retrying in {delay:.1f} s (try {self.failures})")
        self.idle(delay)

    def explain(self, what, err):
        """One message for a refusal, naming what to fix."""
        if isinstance(err, Misconfigured):
            return f"{what}: {err.message}"
        details = err.details
        if err.status == 401:
            return (f"{what}: the server refused the {self.token_name} ({err.code}: {err.message});"
                    " it is unknown, revoked or expired: check --token / TURNLOG_TOKEN")
        if err.status == 403:
            return f"{what}: the {self.token_name} may not do this ({err.code}): {err.message}"
        if err.status == 404 and err.code == "session_not_found":
            return (f"{what}: the server knows no session of that id that the {self.token_name} may"
                    " write (unknown, or assigned to another machine: the server's log names the"
                    " fix, `assign-machine`)")
        if err.code == "seq_conflict":
            return (f"{what}: line seq {details.get('seq')} was stored before with other content;"
                    " is another run writing this session (or its spool copied)? nothing of the"
                    " batch was stored")
        if err.code == "line_too_long":
            return (f"{what}: line seq {details.get('seq')} is longer than the server's"
                    f" MAX_LINE_LENGTH ({err.message}); it was not stored")
        if err.code == "session_output_limit":
            return (f"{what}: the session is at its output limit of {details.get('limit')}"
                    f" bytes ({details.get('output_bytes')} stored); the rest is not stored")
        if err.code in ("request_entity_too_large", "too_many_chunks"):
            return f"{what}: one line alone is over the server's request limit ({err.message})"
        fields = details.get("fields")
        extra = f" {fields}" if fields else ""
        return f"{what}: the server refused it ({err.status} {err.code}): {err.message}{extra}"


class _TooBig(Exception):
    """The server refused a batch for its size; smaller ones may pass."""
