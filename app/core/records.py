"""Plain records that storage returns and takes, services return and schemas dump."""
from dataclasses import dataclass
from dataclasses import field


@dataclass
class AgentSession:
    session_id: str
    user_id: str | None
    session_type: str
    context: dict
    status: str
    provider: str
    exit_code: int | None
    message_count: int
    request_count: int
    total_tokens: int
    total_input_tokens: int
    total_output_tokens: int
    next_event_index: int
    created_at: str
    updated_at: str
    conversation_turn_count: int = 0
    visible_message_count: int = 0
    machine: str | None = None
    opened_by_token: int | None = None  # for the sessions-per-token quota
    output_bytes: int = 0  # UTF-8 bytes of output accepted, for the output quota
    # Summed from the turns' own usage (app/transcript/usage.py), apart from usage reports.
    transcript_input_tokens: int = 0
    transcript_output_tokens: int = 0
    transcript_cache_read_tokens: int = 0
    transcript_cache_creation_tokens: int = 0
    transcript_cost_usd: float = 0.0
    # What ran (migration 0026): its arguments, secrets redacted, and its first prompt;
    # and for a failed session, why it never started and its last stderr lines.
    command: list | None = None
    first_prompt: str | None = None
    failure_reason: str | None = None
    stderr_tail: list = field(default_factory=list)
    runner_seen_at: str | None = None  # the runner's last heartbeat (migration 0024)
    stale: bool = False  # running, but silent too long (sessions.mark_stale)
    messages: list = field(default_factory=list)
    # with_openers: its first init note and first assistant row with text (its title)
    openers: list = field(default_factory=list)
    pending_inputs: list = field(default_factory=list)  # not yet applied (get_session only)
    # get_session only (issue 30): permissions awaiting an answer, what the runner
    # offers now (control.controls_of), and who asked for the stop that ended it.
    pending_permissions: list = field(default_factory=list)
    controls: dict | None = None
    stopped_by: str | None = None
    open_turn: dict | None = None  # the turn still accumulating (get_session only)
    # get_session with a bound: more messages follow, from this cursor on.
    messages_truncated: bool = False
    messages_next_cursor: str | None = None
    messages_prev_cursor: str | None = None  # get_session_tail: older messages page back from here
    # open_session by a runner: the session's own write token, shown this once.
    write_token: str | None = None

    @property
    def is_completed(self):
        return self.status != "running"

    @property
    def transcript_usage(self):
        """What the turns reported, summed: the GET payload's `transcript_usage`."""
        return {
            "input_tokens": self.transcript_input_tokens,
            "output_tokens": self.transcript_output_tokens,
            "cache_read_input_tokens": self.transcript_cache_read_tokens,
            "cache_creation_input_tokens": self.transcript_cache_creation_tokens,
            # float sums carry noise in the last digits; costs are cents and fractions of them
            "total_cost_usd": round(self.transcript_cost_usd, 9),
        }


@dataclass(frozen=True)
class LockedSession:
    """A session row locked for a write, with what a write needs of it beyond the
    AgentSession: its open turn's header and the highest producer seq it stored."""

    session: AgentSession
    turn_state: dict | None
    max_seq: int | None


@dataclass
class Message:
    id: int
    session_id: str
    role: str
    content: str
    content_blocks: list
    metadata: dict
    source: str
    turn_key: str
    timestamp: str


# Chunk, StoredOutput and StreamEvent (app/transcript/event_types.py) are made once
# per line ingested: plain slotted dataclasses, since a frozen one sets each of its
# fields through object.__setattr__, which shows at that rate (docs/performance.md).
# Nothing changes them.


@dataclass(slots=True)
class Chunk:
    """One line a runner posted: `seq` is the runner's own number, if it sends one."""

    data: str
    stream: str = "stdout"
    seq: int | None = None


@dataclass(slots=True)
class StoredOutput:
    """One numbered buffer line as stored; the repository stores its output event's JSON
    (app/formats/output_frames.py) beside it."""

    event_index: int
    stream: str
    payload: str
    producer_seq: int | None
    created_at: str


@dataclass(frozen=True)
class IngestReceipt:
    accepted: int
    duplicates: int
    last_event_index: int | None
    messages_written: int
    usage_counted: int = 0


@dataclass(frozen=True)
class TranscriptDelta:
    """What one write transaction adds to a session's transcript counters."""

    messages: int
    turns: int
    visible: int
    usage: dict | None = None  # the new turns' transcript usage (transcript_delta())


@dataclass(frozen=True)
class Page:
    items: list
    next_cursor: str | None


def fitting(sizes, max_bytes):
    """How many of `sizes`, in order, fit in `max_bytes` together; at least one (a
    page always moves on), all of them for a `max_bytes` of 0."""
    total = 0
    for count, size in enumerate(sizes):
        total += size
        if max_bytes and total > max_bytes and count:
            return count
    return len(sizes)


@dataclass(frozen=True)
class TokenRecord:
    """A stored bearer token, without its secret."""

    id: int
    kind: str
    name: str
    is_admin: bool
    created_at: str
    revoked_at: str | None
    allowed_users: tuple | None = None  # a runner's users; None: any user
    expires_at: str | None = None  # None: never
    session_id: str | None = None  # a session's own write token
    parent_id: int | None = None  # its runner token (listings only; None: not known)


@dataclass(frozen=True)
class SearchHit:
    """A transcript row that matched a search, with a snippet of its text."""

    id: int
    session_id: str
    role: str
    timestamp: str
    session_type: str
    user_id: str | None
    snippet: str | None
    # The row's first characters, when it is too long for the database's snippet
    # function to read in bounded time: the service makes the snippet from them.
    head: str | None = None


@dataclass(frozen=True)
class Evidence:
    """One shell command an agent ran, and what came of it (app/transcript/evidence.py)."""

    id: int
    session_id: str
    evidence_id: str
    turn_id: str
    command: str
    exit_code: int | None
    is_error: bool
    event_range: list  # [first, last] buffer index of the lines it came from
    output_head: str
    output_tail: str
    output_bytes: int
    test_summary: dict | None
    created_at: str


@dataclass(frozen=True)
class ToolResult:
    """One tool call of a closed turn and the result that answers it (a row of
    session_tool_results; app/transcript/evidence.py tool_result_items)."""

    id: int
    session_id: str
    turn_id: str
    tool_use_id: str
    name: str | None  # None: the call was made in an earlier turn
    input: dict | list | str | int | float | bool | None
    has_result: bool
    is_error: bool
    output: str
    output_bytes: int
    truncated: bool
    message_id: int | None  # the assistant row of its turn; None: the turn wrote none
    after_message_id: int  # its own row, else the newest row before its turn (0: none)
    created_at: str
    output_omitted: bool = False  # a page's byte budget ran out: `output` left empty


@dataclass(frozen=True)
class ToolTurn:
    """A closed turn that wrote no transcript row (an ordinary session's tool-only
    turn), shown between the rows: its calls and results, after `after_message_id`."""

    turn_id: str
    after_message_id: int
    created_at: str
    tool_results: list


@dataclass(frozen=True)
class PageTools:
    """The tool results of a page of messages: {message id: [ToolResult]} of its rows,
    the ToolTurns among them, and whether results past TOOL_RESULTS_PER_PAGE were left out."""

    by_message: dict
    tool_turns: list
    truncated: bool = False


@dataclass(frozen=True)
class SessionInput:
    """A prompt a person sent to a live session, queued until the agent takes it."""

    input_id: int
    session_id: str
    client_message_id: str
    content: str
    state: str  # queued, delivered, applied or failed
    reason: str | None
    created_by: str | None
    created_at: str
    delivered_at: str | None = None
    applied_at: str | None = None


@dataclass(frozen=True)
class SessionCommand:
    """What a session's runner must do (docs/control.md): kind input, permission,
    interrupt or stop, with its body for the runner; acknowledged once it has acted."""

    command_id: int
    session_id: str
    kind: str
    body: dict
    created_by: str | None
    created_at: str
    acked_at: str | None = None
    outcome: str | None = None  # done or failed, once acknowledged
    reason: str | None = None


@dataclass(frozen=True)
class SessionPermission:
    """A tool call the agent asked a person to allow, and how it was resolved."""

    session_id: str
    request_id: str
    tool_name: str
    tool_input: dict
    event_index: int | None
    requested_at: str
    expires_at: str | None  # None: it waits for an answer for ever
    state: str  # pending, allowed, denied, expired or cancelled
    message: str | None = None
    resolved_by: str | None = None
    resolved_at: str | None = None
