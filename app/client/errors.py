"""What the client raises: no answer, an error answer, a run that cannot go on; and the
exit codes of `turnlog run`'s own ends (docs/runner.md has the table)."""

# The runner's own failure, as distinct from the child's exit code (as `env` and
# `docker run` use 125): a refusal, a spool it cannot read, a session id that is no UUID.
RUNNER_FAILED = 125
# One batch failed on the server the most times in a row a run allows (it is kept).
BATCH_GIVEN_UP = 124
# Another run holds the spool of the session this one was asked to continue.
SPOOL_LOCKED = 123
# The command cannot be run (as `env` and shells say): found but not executable, or
# not found at all. Checked before a session is opened.
CANNOT_RUN = 126
NOT_FOUND = 127


class Unreachable(Exception):
    """No HTTP answer: the connection was refused, reset or timed out. `reached` says the
    request may have got to the server (it died, dropped the connection or hung on it),
    as against never connecting."""

    def __init__(self, message, reached=False):
        super().__init__(message)
        self.reached = reached


class ApiError(Exception):
    """The server answered with an error envelope."""

    def __init__(self, status, code, message, details=None, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.retry_after = retry_after

    @property
    def transient(self):
        """Worth retrying as it is: the server is overloaded, busy or broken for now."""
        return self.status == 429 or self.status >= 500


class Misconfigured(ApiError):
    """The --server URL cannot be right (no scheme, a path into the API, TLS spoken to a
    plain-HTTP server, no turnlog behind it): the message names the fix. Never retried;
    the commands exit RUNNER_FAILED with it."""

    def __init__(self, message, status=0):
        super().__init__(status, "misconfigured", message)
        self.args = (message,)

    def __str__(self):
        return self.message


class RunnerFailed(Exception):
    """A refusal that retrying cannot fix; the message says what to change."""

    def __init__(self, message, exit_code=RUNNER_FAILED):
        super().__init__(message)
        self.exit_code = exit_code


class BatchGivenUp(RunnerFailed):
    """The same batch failed on the server too many times in a row: posting it again
    would only fail (or kill a worker) again."""

    def __init__(self, message):
        super().__init__(message, BATCH_GIVEN_UP)
