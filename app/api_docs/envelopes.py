"""Schemas of the response envelopes the views build around the real dump schemas,
and of the error envelope (app/errors.py). Used only to describe the API: each
nests a schema of app/schemas.py rather than repeating its fields.
"""
from marshmallow import fields

from app.schemas import BaseSchema
from app.schemas import CommandSchema
from app.schemas import EvidenceSchema
from app.schemas import InputSchema
from app.schemas import MessageSchema
from app.schemas import MessageWithToolsSchema
from app.schemas import PermissionSchema
from app.schemas import SearchHitSchema
from app.schemas import SessionListItemSchema
from app.schemas import SessionSchema
from app.schemas import SessionSummarySchema
from app.schemas import ToolTurnSchema


def _cursor():
    return fields.String(required=True, allow_none=True,
                         metadata={"description": "pass back to get the next page; null at the end"})


class SessionEnvelopeSchema(BaseSchema):
    session = fields.Nested(SessionSummarySchema, required=True)


class SessionOpenedSchema(SessionEnvelopeSchema):
    write_token = fields.String(metadata={
        "description": "Only when a runner opened the session: a token that writes this session"
                       " alone (output, complete, usage) and expires SESSION_TOKEN_GRACE_SECONDS after"
                       " it completes. Shown once; only its hash is kept."})


class SessionDetailEnvelopeSchema(BaseSchema):
    session = fields.Nested(SessionSchema, required=True)


class SessionPageSchema(BaseSchema):
    sessions = fields.List(fields.Nested(SessionListItemSchema), required=True)
    next_cursor = _cursor()


class MessagePageSchema(BaseSchema):
    messages = fields.List(fields.Nested(MessageSchema), required=True)
    next_cursor = _cursor()


class MessageToolsPageSchema(BaseSchema):
    """messages?include=tool_results: the page, each message with its tool results."""

    messages = fields.List(fields.Nested(MessageWithToolsSchema), required=True)
    tool_turns = fields.List(fields.Nested(ToolTurnSchema), required=True, metadata={
        "description": "the turns that wrote no row, placed from `after` up to the page's last"
                       " message (on the last page, after it too), in transcript order"})
    tool_results_truncated = fields.Boolean(required=True, metadata={
        "description": "more results than a page carries (2000 of the rows', 2000 of the"
                       " turns without a row): the rest are left out"})
    next_cursor = _cursor()


class EvidencePageSchema(BaseSchema):
    evidence = fields.List(fields.Nested(EvidenceSchema), required=True)
    next_cursor = _cursor()


class InputEnvelopeSchema(BaseSchema):
    input = fields.Nested(InputSchema, required=True)
    runner_attached = fields.Boolean(required=True, metadata={
        "description": "a runner's heartbeat came within RUNNER_ATTACHED_SECONDS; when false the"
                       " input waits for one"})


class PermissionEnvelopeSchema(BaseSchema):
    permission = fields.Nested(PermissionSchema, required=True)


class CommandQueuedSchema(BaseSchema):
    command = fields.Nested(CommandSchema, required=True)
    runner_attached = fields.Boolean(required=True, metadata={
        "description": "a runner's heartbeat came within RUNNER_ATTACHED_SECONDS; when false the"
                       " command waits for one"})


class CommandEnvelopeSchema(BaseSchema):
    command = fields.Nested(CommandSchema, required=True)


class RunnerSchema(BaseSchema):
    attached = fields.Boolean(required=True)
    controls = fields.List(fields.String(), required=True, metadata={
        "description": "what this runner offers, out of send, permissions, interrupt, stop"})
    seen_at = fields.String(required=True)


class RunnerEnvelopeSchema(BaseSchema):
    runner = fields.Nested(RunnerSchema, required=True)


class CommandPollSchema(BaseSchema):
    commands = fields.List(fields.Dict(), required=True, metadata={
        "description": "unacknowledged commands after the cursor, oldest first: each its body"
                       " (docs/control.md) with command_id, kind and created_at"})
    last_command_id = fields.Integer(required=True, metadata={
        "description": "the cursor to pass back as `after`"})


class OpenAIMessagesSchema(BaseSchema):
    # OpenAI chat messages are built as plain dicts (app/formats/openai_format.py).
    messages = fields.List(fields.Dict(), required=True)


class SearchPageSchema(BaseSchema):
    results = fields.List(fields.Nested(SearchHitSchema), required=True)
    next_cursor = _cursor()


class UsageReceiptSchema(BaseSchema):
    counted = fields.Boolean(required=True)
    session = fields.Nested(SessionSummarySchema, required=True)


class UsageReceiptsSchema(BaseSchema):
    counted = fields.List(fields.Boolean(), required=True, metadata={
        "description": "for each report, in order: counted now (true) or a repeat (false)"})
    session = fields.Nested(SessionSummarySchema, required=True)


class ErrorSchema(BaseSchema):
    code = fields.String(required=True, metadata={"description": "stable, machine-readable"})
    message = fields.String(required=True)
    details = fields.Dict(required=True)


class ErrorEnvelopeSchema(BaseSchema):
    error = fields.Nested(ErrorSchema, required=True)
