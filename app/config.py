"""Default settings. Every key can be overridden by a `TURNLOG_<KEY>` environment
variable (values are parsed as JSON where possible) or by `create_app(test_config)`."""


class Config:
    # Filled in by create_app with a SQLite file in the instance folder when unset.
    SQLALCHEMY_DATABASE_URI = None
    SQLALCHEMY_ENGINE_OPTIONS = {}
    # Seconds a SQLite writer waits for the write lock before giving up.
    SQLITE_BUSY_TIMEOUT = 30.0
    # SQLite: seconds between checkpoints of the write-ahead log, taken by a thread while
    # writes come rather than by the commit that fills the log; 0 leaves them to commits.
    SQLITE_CHECKPOINT_SECONDS = 0.5
    # Requests larger than this get 413 before any of their body is read.
    MAX_CONTENT_LENGTH = 8 * 1024 * 1024
    # How long raw output lines stay in the live buffer (the transcript is kept).
    OUTPUT_RETENTION_SECONDS = 24 * 3600
    # Live output stream (SSE): rows read per query, how often an idle stream
    # looks for new rows, the keep-alive comment interval, the longest a single
    # connection lasts (the client then reconnects with its cursor), and the
    # reconnect delay told to EventSource.
    STREAM_PAGE_SIZE = 5000
    # 0.05 s: a follower on SQLite sees a line another worker committed within 50 ms (one
    # small query per worker per poll, and only while the worker has followers; the
    # worker that committed it wakes its own followers at once). A reply to a prompt
    # someone typed goes through it, so it is kept short.
    STREAM_POLL_SECONDS = 0.05
    STREAM_HEARTBEAT_SECONDS = 15.0
    STREAM_MAX_SECONDS = 3600.0
    STREAM_RETRY_MS = 3000
    # Open live streams one token may hold at once, across every process and
    # instance (callers without a token, with AUTH_DISABLED, are not limited).
    MAX_STREAMS_PER_TOKEN = 32
    # Page sizes for list endpoints; the sessions list allows less, its items being
    # bigger. GET of one session carries at most SESSION_MESSAGES_MAX messages (then
    # `messages_truncated` and a cursor for the messages endpoint).
    DEFAULT_PAGE_SIZE = 100
    MAX_PAGE_SIZE = 1000
    SESSIONS_PAGE_MAX = 200
    SESSION_MESSAGES_MAX = 1000
    # The viewer opens a session at its newest VIEWER_PAGE_MESSAGES messages and loads
    # older pages of as many on demand.
    VIEWER_PAGE_MESSAGES = 200
    # Bytes of a session's `context` (as compact JSON) a runner may attach.
    MAX_CONTEXT_BYTES = 64 * 1024
    # Folder holding NNNN_name.sql migrations; None means the project's migrations/.
    MIGRATIONS_DIR = None

    # Authentication. Writes take a runner token, reads a user token (docs/api.md).
    # AUTH_DISABLED lets anyone read and write everything: for local demos and tests
    # only, never on a reachable server.
    AUTH_DISABLED = False
    # Signs the viewer's session cookie. When unset, a random key is kept in
    # instance/secret_key, shared by the workers of one host; several hosts behind
    # one address must be given the same key.
    SECRET_KEY = None
    # Where `demo` keeps the user tokens it printed, to print the same one next time;
    # None: demo-tokens.json in the instance folder.
    DEMO_TOKENS_FILE = None
    SESSION_COOKIE_SECURE = True
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    # How long a viewer sign-in lasts (then the visitor signs in again); signing out
    # ends it at once.
    VIEWER_SESSION_SECONDS = 7 * 24 * 3600
    # True when browsers reach the service over https only (a TLS proxy in front):
    # every response then carries Strict-Transport-Security.
    BEHIND_HTTPS = False

    # Level of the app's own log lines (session opened and completed, errors), each
    # tagged with its request's X-Request-ID.
    LOG_LEVEL = "INFO"

    # Limits, each answered with its own error code: requests per token per window
    # (per worker process; 0 turns the limit off), chunks per output request,
    # characters per output line.
    RATE_LIMIT_REQUESTS = 6000
    RATE_LIMIT_WINDOW_SECONDS = 60
    MAX_CHUNKS_PER_REQUEST = 10_000
    MAX_LINE_LENGTH = 2 * 1024 * 1024
    # Seconds one search query may run before it is stopped with 503 search_timeout
    # (a stopped query frees its worker; under gevent a running one holds it whole).
    SEARCH_TIMEOUT_SECONDS = 2.0
    # Quotas, each refused with its own message: sessions one token may open per
    # minute (429), UTF-8 bytes of output one session may take in all (413
    # session_output_limit), sessions one user may have running at once (429; 0: no
    # limit). 0 turns the first two off as well.
    SESSIONS_PER_TOKEN_PER_MINUTE = 120
    MAX_SESSION_OUTPUT_BYTES = 1024 ** 3
    MAX_OPEN_SESSIONS_PER_USER = 0
    # A session's own write token (returned when a runner opens it) keeps working this
    # long after the session completes, for late usage reports and retried requests.
    SESSION_TOKEN_GRACE_SECONDS = 3600
    # How often a long live stream looks its credentials up again: a revoked token or
    # a sign-out ends the stream within about this long.
    STREAM_AUTH_CHECK_SECONDS = 5.0

    # Tokens and access (issue 29): a session's own write token expires this long after
    # it was issued or last renewed; a write renews it (at most every 10 minutes), so it
    # outlives its runner by this long at most. 0: it never expires while the session runs.
    WRITE_TOKEN_LIFETIME_SECONDS = 24 * 3600
    # How long a read (REST, live stream page, viewer) waits for SQLite's lock before
    # it answers 503 database_busy.
    SQLITE_READ_BUSY_TIMEOUT = 2.0
    # Bytes (issue 29): quotas per user (ids compared stripped and case-folded) per UTC
    # day, refused with 429 quota_exceeded and Retry-After (seconds to the day's end):
    # UTF-8 bytes of output accepted, sessions opened. 0 turns one off.
    MAX_OUTPUT_BYTES_PER_USER_PER_DAY = 8 * 1024 ** 3
    MAX_SESSIONS_PER_USER_PER_DAY = 2000
    # A page of messages (GET of a session, .../messages, the viewer's pages) stops at
    # this many bytes as stored (its rows' text columns) as well as at its count, then
    # says how to go on as a full page does; its first row always comes.
    PAGE_MAX_BYTES = 16 * 1024 ** 2
    # A stream's page of buffered output (and the live hub's, shared by its followers)
    # stops at this many bytes as well as at STREAM_PAGE_SIZE rows: what one replaying
    # follower holds at a time, give or take one row.
    STREAM_PAGE_BYTES = 4 * 1024 ** 2
    # Open live streams per user, whichever of their tokens holds them (429
    # too_many_streams; 0: no limit), and per server process (0: none; gunicorn.conf.py
    # sets it under the gthread worker, where each stream holds one of its threads).
    MAX_STREAMS_PER_USER = 64
    MAX_STREAMS_PER_PROCESS = 0
    # The viewer's pages (its first page, older and newer fragments) stop at this many
    # bytes of text as stored: each is rendered as Markdown, which costs more per byte
    # than the API's JSON, so a page of hostile text must be smaller for it to hold a
    # worker no longer (the cost per MiB: docs/performance.md, Text parsing).
    VIEWER_PAGE_BYTES = 2 * 1024 ** 2

    # Inputs to a live session (issue 30): the most UTF-8 bytes one prompt may hold
    # (POST .../messages); more is a 413 `input_too_large`.
    MAX_INPUT_BYTES = 100 * 1024

    # The control channel's server side (issue 30, docs/control.md): a runner counts as
    # attached this long after its last heartbeat; an open command stream refreshes the
    # heartbeat at most this often. A command wakes its waiting runner: in its process at
    # once, on PostgreSQL by NOTIFY, on SQLite by each process's read, every
    # COMMAND_WATCH_SECONDS, of which sessions got one (one query for all its runners).
    # A waiting runner still reads its commands at least every COMMAND_POLL_SECONDS (a
    # wake-up lost, overdue permissions): each such read is a few queries per runner, so
    # not often. A long poll waits at most COMMAND_WAIT_MAX_SECONDS.
    RUNNER_ATTACHED_SECONDS = 30
    RUNNER_HEARTBEAT_SECONDS = 5
    # A running session whose runner sent neither output nor a heartbeat for this long is
    # shown `stale`, not live (app/core/liveness.py). `turnlog run` sends a heartbeat
    # after 20 s of quiet, so this leaves room for a few missed ones and a slow retry.
    RUNNER_STALE_SECONDS = 120
    COMMAND_POLL_SECONDS = 2.0
    COMMAND_WATCH_SECONDS = 0.05
    COMMAND_WAIT_MAX_SECONDS = 30

    # What ingest derives from the agent's lines (issue 30): a permission request the
    # agent printed waits this many seconds for an answer, then it is denied as
    # `expired`; 0: it waits for ever, as the agent CLIs themselves do.
    PERMISSION_TIMEOUT_SECONDS = 600
    # Tool output (issue 32): each tool result a closed turn holds is kept in
    # session_tool_results with at most this many bytes of UTF-8 of its output (more is
    # cut to its first and last parts around a marker naming the original size); 0
    # keeps every result whole.
    TOOL_RESULT_MAX_BYTES = 64 * 1024


# Numeric settings and the least each may be: a zero page size or poll interval
# would make a stream spin or stall, so a bad value stops the app at start-up
# with the setting's name rather than failing requests later.
AT_LEAST = {
    "SQLITE_BUSY_TIMEOUT": 0,
    "SQLITE_CHECKPOINT_SECONDS": 0,
    "OUTPUT_RETENTION_SECONDS": 1,
    "STREAM_PAGE_SIZE": 1,
    "STREAM_POLL_SECONDS": 0.001,
    "STREAM_HEARTBEAT_SECONDS": 0.001,
    "STREAM_MAX_SECONDS": 0.001,
    "STREAM_RETRY_MS": 0,
    "MAX_STREAMS_PER_TOKEN": 1,
    "DEFAULT_PAGE_SIZE": 1,
    "MAX_PAGE_SIZE": 1,
    "SESSIONS_PAGE_MAX": 1,
    "SESSION_MESSAGES_MAX": 1,
    "VIEWER_PAGE_MESSAGES": 1,
    "MAX_CONTEXT_BYTES": 2,
    "RATE_LIMIT_REQUESTS": 0,
    "RATE_LIMIT_WINDOW_SECONDS": 0.001,
    "MAX_CHUNKS_PER_REQUEST": 1,
    "MAX_LINE_LENGTH": 1,
    "SEARCH_TIMEOUT_SECONDS": 0.001,
    "VIEWER_SESSION_SECONDS": 1,
    "SESSIONS_PER_TOKEN_PER_MINUTE": 0,
    "MAX_SESSION_OUTPUT_BYTES": 0,
    "MAX_OPEN_SESSIONS_PER_USER": 0,
    "SESSION_TOKEN_GRACE_SECONDS": 0,
    "STREAM_AUTH_CHECK_SECONDS": 0.001,
    "WRITE_TOKEN_LIFETIME_SECONDS": 0,
    "SQLITE_READ_BUSY_TIMEOUT": 0,
    "MAX_OUTPUT_BYTES_PER_USER_PER_DAY": 0,
    "MAX_SESSIONS_PER_USER_PER_DAY": 0,
    "PAGE_MAX_BYTES": 1,
    "STREAM_PAGE_BYTES": 1,
    "MAX_STREAMS_PER_USER": 0,
    "MAX_STREAMS_PER_PROCESS": 0,
    "VIEWER_PAGE_BYTES": 1,
    "MAX_INPUT_BYTES": 1,
    "RUNNER_ATTACHED_SECONDS": 1,
    "RUNNER_HEARTBEAT_SECONDS": 0.001,
    "RUNNER_STALE_SECONDS": 1,
    "COMMAND_POLL_SECONDS": 0.001,
    "COMMAND_WATCH_SECONDS": 0.001,
    "COMMAND_WAIT_MAX_SECONDS": 1,
    "PERMISSION_TIMEOUT_SECONDS": 0,
    "TOOL_RESULT_MAX_BYTES": 0,
}
WHOLE_NUMBERS = {"STREAM_PAGE_SIZE", "STREAM_RETRY_MS", "MAX_STREAMS_PER_TOKEN", "DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE",
                 "SESSIONS_PAGE_MAX", "SESSION_MESSAGES_MAX", "VIEWER_PAGE_MESSAGES", "MAX_CONTEXT_BYTES",
                 "RATE_LIMIT_REQUESTS", "MAX_CHUNKS_PER_REQUEST", "MAX_LINE_LENGTH",
                 "VIEWER_SESSION_SECONDS", "SESSIONS_PER_TOKEN_PER_MINUTE", "MAX_SESSION_OUTPUT_BYTES",
                 "MAX_OPEN_SESSIONS_PER_USER", "SESSION_TOKEN_GRACE_SECONDS",
                 "WRITE_TOKEN_LIFETIME_SECONDS",
                 "MAX_OUTPUT_BYTES_PER_USER_PER_DAY", "MAX_SESSIONS_PER_USER_PER_DAY",
                 "PAGE_MAX_BYTES", "STREAM_PAGE_BYTES", "MAX_STREAMS_PER_USER", "MAX_STREAMS_PER_PROCESS",
                 "VIEWER_PAGE_BYTES", "MAX_INPUT_BYTES",
                 "RUNNER_ATTACHED_SECONDS", "COMMAND_WAIT_MAX_SECONDS",
                 "PERMISSION_TIMEOUT_SECONDS", "TOOL_RESULT_MAX_BYTES"}


def check_numbers(config):
    """Raise ValueError naming the first numeric setting that is not a number in range."""
    for key, least in AT_LEAST.items():
        value = config[key]
        kind = int if key in WHOLE_NUMBERS else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or value < least:
            what = "a whole number" if key in WHOLE_NUMBERS else "a number"
            raise ValueError(f"setting {key} (TURNLOG_{key}) must be {what} >= {least},"
                             f" not {value!r}")
    if config["DEFAULT_PAGE_SIZE"] > config["MAX_PAGE_SIZE"]:
        raise ValueError("setting DEFAULT_PAGE_SIZE must not exceed MAX_PAGE_SIZE")
