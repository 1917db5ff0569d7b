"""What the client raises: no answer, an error answer, a run that cannot go on."""


class Unreachable(Exception):
    """No HTTP answer: the connection was refused, reset or timed out."""


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


class RunnerFailed(Exception):
    """A refusal that retrying cannot fix; the message says what to change."""
