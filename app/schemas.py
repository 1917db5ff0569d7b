"""marshmallow schemas: `load` what comes in, `dump` what goes out.

Every schema inherits `Meta.unknown = RAISE` from BaseSchema, so a misspelt field
is a 422, not silently ignored. Dump schemas list their fields explicitly: an
internal column (turn_key, next_event_index) cannot leak by accident; each is
`required`, which dumping ignores but the OpenAPI document publishes, so the
contract test fails when a response leaves a field out.
"""
from marshmallow import RAISE
from marshmallow import Schema
from marshmallow import ValidationError
from marshmallow import fields
from marshmallow import validate

from app.core import command_line
from app.providers import PROVIDERS
from app.providers.json_depth import MAX_DEPTH
from app.providers.json_depth import too_deep
from app.providers.surrogates import has_unstorable
from app.providers.surrogates import replace_unstorable
from app.transcript.flush_policy import SESSION_TYPES

STREAMS = ("stdout", "stderr", "system")
# What a signed 64-bit column (SQLite INTEGER, PostgreSQL BIGINT) can hold.
MAX_INT64 = 2**63 - 1
# Exit codes are stored like a signed 32-bit integer (PostgreSQL INTEGER).
EXIT_CODE_RANGE = validate.Range(min=-(2**31), max=2**31 - 1)
COUNT_RANGE = validate.Range(min=0, max=MAX_INT64)
# One usage report's figures: far above any real report, low enough that the
# session totals they add up to cannot overflow a 64-bit column.
USAGE_RANGE = validate.Range(min=0, max=2**40)


class Identifier(fields.String):
    """A string that must be storable text: a lone surrogate or a NUL is a 422, not a 500."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if has_unstorable(text):
            raise ValidationError("Not storable text (a lone surrogate or NUL).")
        return text


class RawText(fields.String):
    """A raw output line, kept whatever it holds: each lone surrogate or NUL becomes U+FFFD."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        return replace_unstorable(text)


class JsonObject(fields.Dict):
    """A free-form JSON object with string keys, nested at most MAX_DEPTH levels."""

    def __init__(self, **kwargs):
        super().__init__(keys=fields.String(), **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        mapping = super()._deserialize(value, attr, data, **kwargs)
        if too_deep(mapping):
            raise ValidationError(f"Nested deeper than {MAX_DEPTH} levels.")
        return mapping


class BaseSchema(Schema):
    class Meta:
        unknown = RAISE


class SessionCreateSchema(BaseSchema):
    session_type = fields.String(required=True, validate=validate.OneOf(SESSION_TYPES))
    context = JsonObject(load_default=dict)
    user_id = Identifier(load_default=None, allow_none=True, validate=validate.Length(max=200))
    provider = fields.String(load_default="claude", validate=validate.OneOf(PROVIDERS))
    machine = Identifier(load_default=None, allow_none=True, validate=validate.Length(max=200))
    # What ran (docs/runner.md): stored with secrets redacted, by the server too.
    command = fields.List(Identifier(validate=validate.Length(max=command_line.MAX_ARG_CHARS)),
                          load_default=None, allow_none=True,
                          validate=validate.Length(max=command_line.MAX_ARGS))
    prompt = Identifier(load_default=None, allow_none=True,
                        validate=validate.Length(max=command_line.MAX_PROMPT_CHARS))


class ChunkSchema(BaseSchema):
    seq = fields.Integer(load_default=None, allow_none=True, strict=True, validate=COUNT_RANGE)
    stream = fields.String(load_default="stdout", validate=validate.OneOf(STREAMS))
    data = RawText(required=True)


class CompleteSchema(BaseSchema):
    exit_code = fields.Integer(load_default=None, allow_none=True, strict=True,
                               validate=EXIT_CODE_RANGE)
    # why the agent never ran (it could not be started); kept with a failed session
    reason = Identifier(load_default=None, allow_none=True, validate=validate.Length(max=2000))


MAX_USAGE_REPORTS = 1000  # per request, like MAX_CHUNKS lines


class UsageReportSchema(BaseSchema):
    report_id = Identifier(required=True, validate=validate.Length(min=1, max=200))
    input_tokens = fields.Integer(load_default=0, strict=True, validate=USAGE_RANGE)
    output_tokens = fields.Integer(load_default=0, strict=True, validate=USAGE_RANGE)
    requests = fields.Integer(load_default=0, strict=True, validate=USAGE_RANGE)


class OutputBatchSchema(BaseSchema):
    chunks = fields.List(fields.Nested(ChunkSchema), required=True,
                         validate=validate.Length(min=1))
    # the usage reports of these lines' result lines, counted in the same transaction:
    # a runner reports usage with the output that carries it, in no request of its own
    usage = fields.List(fields.Nested(UsageReportSchema), load_default=list,
                        validate=validate.Length(max=MAX_USAGE_REPORTS))


class UsageReportsSchema(BaseSchema):
    """Several usage reports in one request: a runner reports every result line of a
    batch at once, not one request each."""

    reports = fields.List(fields.Nested(UsageReportSchema), required=True,
                          validate=validate.Length(min=1, max=MAX_USAGE_REPORTS))


class MessageSchema(BaseSchema):
    id = fields.Integer(required=True)
    role = fields.String(required=True)
    content = fields.String(required=True)
    content_blocks = fields.List(fields.Dict(), required=True)
    source = fields.String(required=True)
    metadata = fields.Dict(required=True, metadata={
        "description": "the row's facts (turn_id, trigger, result, usage, ...); its blocks are in"
                       " content_blocks only (the stored copy in metadata is not sent)"})
    timestamp = fields.String(required=True)


class TestSummarySchema(BaseSchema):
    framework = fields.String(required=True, metadata={
        "description": "pytest, unittest, jest, vitest, go, cargo or mocha"})
    passed = fields.Integer(required=True, metadata={
        "description": "tests; for go test without -v (no line per passing test) packages: its ok lines"})
    failed = fields.Integer(required=True, metadata={
        "description": "tests; for go test without -v packages: its FAIL lines"})
    skipped = fields.Integer(required=True)
    errors = fields.Integer(required=True)


class EvidenceSchema(BaseSchema):
    id = fields.Integer(required=True, metadata={"description": "the paging cursor's unit"})
    evidence_id = fields.String(required=True, metadata={"description": "the tool call's id"})
    turn_id = fields.String(required=True, metadata={
        "description": "the turn that ran it: metadata.turn_id of its transcript row"})
    command = fields.String(required=True, metadata={
        "description": "the command line; over 8 KiB, its first and last 4 KiB around ' …[N bytes cut]… '"})
    exit_code = fields.Integer(required=True, allow_none=True, metadata={
        "description": "null where the provider reports none"})
    is_error = fields.Boolean(required=True)
    event_range = fields.List(fields.Integer(allow_none=True), required=True, metadata={
        "description": "[first, last] event index of the buffer lines it came from"})
    output_head = fields.String(required=True, metadata={
        "description": "the output's first 4 KiB (all of it, up to 8 KiB)"})
    output_tail = fields.String(required=True, metadata={
        "description": "the output's last 4 KiB; empty when output_head holds it all"})
    output_bytes = fields.Integer(required=True, metadata={"description": "the whole output's UTF-8 size"})
    test_summary = fields.Nested(TestSummarySchema, required=True, allow_none=True, metadata={
        "description": "test counts read from the output; null when it reports no test run"})
    created_at = fields.String(required=True)


class ToolResultSchema(BaseSchema):
    """One tool call and the result that answers it (session_tool_results)."""

    id = fields.Integer(required=True)
    tool_use_id = fields.String(required=True, metadata={
        "description": "the call's id: the `id` of its tool_use block, the `tool_use_id` of its"
                       " tool_result"})
    turn_id = fields.String(required=True, metadata={"description": "the turn it came in"})
    name = fields.String(required=True, allow_none=True, metadata={
        "description": "the tool's name; null for a result whose call an earlier turn made"})
    input = fields.Raw(required=True, allow_none=True, metadata={
        "description": "the call's input (over TOOL_RESULT_MAX_BYTES as JSON: its top-level"
                       " scalar fields and `truncated: true`); null as for `name`"})
    has_result = fields.Boolean(required=True, metadata={
        "description": "false for a call whose turn closed without its result"})
    is_error = fields.Boolean(required=True)
    output = fields.String(required=True, metadata={
        "description": "the result as text; over TOOL_RESULT_MAX_BYTES, its first and last"
                       " parts around `…[N bytes, M cut]…`"})
    output_bytes = fields.Integer(required=True, metadata={"description": "the whole output's UTF-8 size"})
    truncated = fields.Boolean(required=True, metadata={"description": "the output was cut when stored"})
    output_omitted = fields.Boolean(required=True, metadata={
        "description": "the page's byte budget ran out: `output` is empty here"})
    message_id = fields.Integer(required=True, allow_none=True, metadata={
        "description": "the row its turn wrote; null for a turn that wrote none"})
    after_message_id = fields.Integer(required=True, metadata={
        "description": "its place: its own row, or the row its turn came after (0: none)"})
    created_at = fields.String(required=True)


class ToolTurnSchema(BaseSchema):
    """A turn that wrote no transcript row (an ordinary session's tool-only turn)."""

    turn_id = fields.String(required=True)
    after_message_id = fields.Integer(required=True, metadata={
        "description": "it comes after this message (0: before the first)"})
    created_at = fields.String(required=True, metadata={"description": "when it closed"})
    tool_results = fields.List(fields.Nested(ToolResultSchema), required=True)


class MessageWithToolsSchema(MessageSchema):
    tool_results = fields.List(fields.Nested(ToolResultSchema), required=True, metadata={
        "description": "with include=tool_results: the calls of this row's turn with their"
                       " results, in order"})


class SearchHitSchema(BaseSchema):
    message_id = fields.Integer(attribute="id", required=True)
    session_id = fields.String(required=True)
    role = fields.String(required=True)
    timestamp = fields.String(required=True)
    session_type = fields.String(required=True)
    user_id = fields.String(allow_none=True, required=True)
    snippet = fields.String(required=True)


class TranscriptUsageSchema(BaseSchema):
    """What the session's closed turns reported of their own usage (each turn's
    result, else its messages), summed once per turn; separate from the usage-report
    counters (total_*_tokens), which only POST .../usage moves."""

    input_tokens = fields.Integer(required=True)
    output_tokens = fields.Integer(required=True)
    cache_read_input_tokens = fields.Integer(required=True)
    cache_creation_input_tokens = fields.Integer(required=True)
    total_cost_usd = fields.Float(required=True)


class SessionSummarySchema(BaseSchema):
    session_id = fields.String(required=True)
    session_type = fields.String(required=True)
    status = fields.String(required=True)
    context = fields.Dict(required=True)
    provider = fields.String(required=True)
    user_id = fields.String(allow_none=True, required=True)
    machine = fields.String(allow_none=True, required=True)
    exit_code = fields.Integer(allow_none=True, required=True)
    stale = fields.Boolean(required=True, metadata={
        "description": "running, but its runner has sent neither output nor a heartbeat for"
                       " RUNNER_STALE_SECONDS: not live (status stays running; the viewer shows"
                       " `stale`)"})
    command = fields.List(fields.String(), allow_none=True, required=True, metadata={
        "description": "the command line the runner ran, secrets redacted; null when not sent"})
    prompt = fields.String(attribute="first_prompt", allow_none=True, required=True, metadata={
        "description": "the first prompt the agent was given (from its command line or an"
                       " interactive run's --prompt); null when unknown"})
    message_count = fields.Integer(required=True)
    conversation_turn_count = fields.Integer(required=True)
    visible_message_count = fields.Integer(required=True)
    request_count = fields.Integer(required=True)
    total_tokens = fields.Integer(required=True)
    total_input_tokens = fields.Integer(required=True)
    total_output_tokens = fields.Integer(required=True)
    transcript_usage = fields.Nested(
        TranscriptUsageSchema, dump_only=True, required=True,
        metadata={"description": "input, output, cache-read and cache-creation tokens and the cost the"
                                 " agent reported for its closed turns, summed; usage reports do not move it"})
    created_at = fields.String(required=True)
    updated_at = fields.String(required=True)


class OpenTurnSchema(BaseSchema):
    """The turn still accumulating: provisional, in no counter, null once flushed."""

    turn_id = fields.String(required=True)
    started_at = fields.String(allow_none=True, required=True)
    event_index = fields.Integer(allow_none=True, required=True)
    visible_text = fields.String(required=True)
    content_blocks = fields.List(fields.Dict(), required=True)


class SessionListItemSchema(SessionSummarySchema):
    """A sessions-list item: no `context`, which may be large (GET the session for it)."""

    class Meta(SessionSummarySchema.Meta):
        exclude = ("context",)


class InputSchema(BaseSchema):
    """An input a person sent to the session (POST .../messages), as queued."""

    input_id = fields.Integer(required=True)
    client_message_id = fields.String(required=True)
    state = fields.String(required=True, metadata={
        "description": "queued, delivered (the runner took it), applied (a transcript row now)"
                       " or failed (see reason)"})
    created_at = fields.String(required=True)


class PendingInputSchema(InputSchema):
    reason = fields.String(allow_none=True, required=True, metadata={
        "description": "why a failed input failed; null otherwise"})


def _not_blank(value):
    if not value.strip():
        raise ValidationError("Must hold more than white space.")


class InputSendSchema(BaseSchema):
    # its size (MAX_INPUT_BYTES of UTF-8) is the use case's to check: 413, not 422
    content = Identifier(required=True, validate=_not_blank)
    client_message_id = Identifier(required=True, validate=validate.Length(min=1, max=200))


class PermissionSchema(BaseSchema):
    """A tool call the agent asked a person to allow (docs/control.md), and its resolution."""

    request_id = fields.String(required=True)
    tool_name = fields.String(required=True)
    input = fields.Raw(attribute="tool_input", required=True, metadata={
        "description": "the tool's input as the agent gave it (a JSON object)"})
    requested_at = fields.String(required=True)
    expires_at = fields.String(allow_none=True, required=True, metadata={
        "description": "when it is denied as `expired` unless answered; null: never"})
    state = fields.String(required=True, metadata={
        "description": "pending, allowed, denied, expired (denied: no answer in time) or"
                       " cancelled (the agent withdrew it)"})
    message = fields.String(allow_none=True, required=True)
    resolved_by = fields.String(allow_none=True, required=True)
    resolved_at = fields.String(allow_none=True, required=True)


class PermissionAnswerSchema(BaseSchema):
    behavior = fields.String(required=True, validate=validate.OneOf(["allow", "deny"]))
    message = Identifier(load_default=None, allow_none=True, validate=validate.Length(max=4000))


class ControlsSchema(BaseSchema):
    """What can be done to the session right now (docs/control.md)."""

    runner_attached = fields.Boolean(required=True, metadata={
        "description": "a runner's heartbeat came within RUNNER_ATTACHED_SECONDS"})
    runner_seen_at = fields.String(allow_none=True, required=True)
    send = fields.Boolean(required=True)
    permissions = fields.Boolean(required=True)
    interrupt = fields.Boolean(required=True)
    stop = fields.Boolean(required=True)
    reasons = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "for each control that is false, why"})


class CommandSchema(BaseSchema):
    """A command for the session's runner (the `data` of an SSE `command` event)."""

    command_id = fields.Integer(required=True)
    kind = fields.String(required=True, metadata={
        "description": "input, permission, interrupt or stop"})
    body = fields.Dict(required=True, metadata={"description": "docs/control.md, per kind"})
    created_at = fields.String(required=True)
    acked_at = fields.String(allow_none=True, required=True)
    outcome = fields.String(allow_none=True, required=True)


class CommandAckSchema(BaseSchema):
    outcome = fields.String(required=True, validate=validate.OneOf(["done", "failed"]))
    reason = Identifier(load_default=None, allow_none=True, validate=validate.Length(max=2000))


class ControlRequestSchema(BaseSchema):
    """The body of an interrupt or a stop: optional, and an empty object when given."""


class RunnerAttachSchema(BaseSchema):
    controls = fields.List(fields.String(validate=validate.OneOf(
        ["send", "permissions", "interrupt", "stop"])), required=True)


class SessionSchema(SessionSummarySchema):
    messages = fields.List(fields.Nested(MessageSchema), required=True)
    pending_inputs = fields.List(fields.Nested(PendingInputSchema), required=True, metadata={
        "description": "inputs sent to the session and not yet applied, oldest first"})
    pending_permissions = fields.List(fields.Nested(PermissionSchema), required=True, metadata={
        "description": "permission requests awaiting an answer, oldest first"})
    controls = fields.Nested(ControlsSchema, allow_none=True, required=True)
    stopped_by = fields.String(allow_none=True, required=True, metadata={
        "description": "who asked for the stop that ended the session; null otherwise"})
    failure_reason = fields.String(allow_none=True, required=True, metadata={
        "description": "a failed session: why the agent never ran, as its runner said (it"
                       " could not be started); null otherwise"})
    stderr_tail = fields.List(fields.String(), required=True, metadata={
        "description": "a failed session: its last stderr lines (up to 20, oldest first, each"
                       " at most 1000 characters), kept at completion; empty otherwise"})
    # True when `messages` stops at SESSION_MESSAGES_MAX: the rest come from
    # GET .../messages?after=<next_cursor>.
    messages_truncated = fields.Boolean(required=True)
    next_cursor = fields.String(attribute="messages_next_cursor", allow_none=True, required=True)
    open_turn = fields.Nested(OpenTurnSchema, allow_none=True, required=True)


class IngestReceiptSchema(BaseSchema):
    accepted = fields.Integer(required=True)
    duplicates = fields.Integer(required=True)
    last_event_index = fields.Integer(allow_none=True, required=True)
    usage_counted = fields.Integer(required=True, metadata={
        "description": "how many of the body's usage reports were counted now (not repeats)"})


session_create_schema = SessionCreateSchema()
output_batch_schema = OutputBatchSchema()
complete_schema = CompleteSchema()
usage_report_schema = UsageReportSchema()
usage_reports_schema = UsageReportsSchema()
message_schema = MessageSchema()
session_summary_schema = SessionSummarySchema()
session_schema = SessionSchema()
session_list_item_schema = SessionListItemSchema()
ingest_receipt_schema = IngestReceiptSchema()
search_hit_schema = SearchHitSchema()
evidence_schema = EvidenceSchema()
tool_result_schema = ToolResultSchema()
tool_turn_schema = ToolTurnSchema()
input_schema = InputSchema()
input_send_schema = InputSendSchema()
permission_schema = PermissionSchema()
permission_answer_schema = PermissionAnswerSchema()
command_schema = CommandSchema()
command_ack_schema = CommandAckSchema()
runner_attach_schema = RunnerAttachSchema()
control_request_schema = ControlRequestSchema()


class MarkdownRenderSchema(BaseSchema):
    """POST /ui/markdown: a text of the live bubble, rendered as its row will be."""

    text = RawText(required=True)
    kind = fields.String(load_default="text", validate=validate.OneOf(("text", "thinking")))
