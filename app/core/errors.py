"""Named failures of the use cases (and of the storage below them); the web layer maps each
to a status code (app/errors.py)."""


class ServiceError(Exception):
    """Base class: `code` is a stable machine-readable name."""

    code = "service_error"

    def __init__(self, message, details=None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class SessionNotFound(ServiceError):
    code = "session_not_found"


class SessionClosed(ServiceError):
    code = "session_completed"


class SeqConflict(ServiceError):
    """A runner sent a seq it sent before with other content (stream or text)."""

    code = "seq_conflict"


class InvalidCursor(ServiceError):
    """A paging cursor that is malformed or out of range."""

    code = "invalid_cursor"


class InvalidEventId(ServiceError):
    """A live feed's resume point (`Last-Event-ID` or `?after=`) that is no event id."""

    code = "invalid_event_id"


class InvalidQuery(ServiceError):
    """A search query with no word to look for, or too many."""

    code = "invalid_query"


class SearchTimeout(ServiceError):
    """A search that ran past its time budget and was stopped."""

    code = "search_timeout"


class UnknownProvider(ServiceError):
    """A session names a provider whose lines no parser reads."""

    code = "unknown_provider"


class NotPermitted(ServiceError):
    """The caller is known but may not do this (a token of the wrong kind or scope)."""

    code = "not_permitted"


class InvalidMachine(ServiceError):
    """A machine name that is empty, too long or not storable text."""

    code = "invalid_machine"


class InvalidTokenName(ServiceError):
    """A token name that is empty, too long or not storable text."""

    code = "invalid_token_name"


class MigrationError(ServiceError):
    """The migrations folder is missing, empty or inconsistent (bad name, gap, twin)."""

    code = "migration_error"


class TooManyStreams(ServiceError):
    """The token already holds as many open live streams as it may."""

    code = "too_many_streams"

    def __init__(self, message, details=None, retry_after=1):
        super().__init__(message, details)
        self.retry_after = retry_after


class QuotaExceeded(TooManyStreams):
    """A quota was reached (sessions opened per token per minute, open sessions per
    user, sessions opened or output bytes accepted per user per day): the request is
    refused whole, and `retry_after` says when to try again."""

    code = "quota_exceeded"


class SessionOutputLimit(ServiceError):
    """A batch would take the session past its total output bytes."""

    code = "session_output_limit"


class InputTooLarge(ServiceError):
    """A prompt over MAX_INPUT_BYTES of UTF-8."""

    code = "input_too_large"


class NotSupported(ServiceError):
    """The session's attached runner does not offer this control (send, interrupt, stop)."""

    code = "not_supported"


class AlreadyResolved(ServiceError):
    """A permission answered, expired or withdrawn before: the first resolution won."""

    code = "already_resolved"


class PermissionNotFound(ServiceError):
    """No permission request of that id in the session."""

    code = "permission_not_found"


class CommandNotFound(ServiceError):
    """No command of that id in the session."""

    code = "command_not_found"
