"""Every operation of the JSON API: path, parameters, body, responses and token.

Bodies and responses name the marshmallow schemas the views load and dump (or
the envelopes around them), so a field added to a schema reaches the document.
"""
from app import schemas
from app.api_docs import envelopes
from app.api_docs.errors import BODY
from app.api_docs.errors import NOT_FOUND
from app.api_docs.errors import error_responses
from app.api_docs.live_events import LIVE_EVENT
from app.formats import exports
from app.streaming.routes import MAX_CLIENT_ID

BASE = "/api/remote/sessions"
RUNNER = [{"runnerToken": []}]
USER = [{"userToken": []}]
JSON = "application/json"


def _query(name, description, **schema):
    return {"in": "query", "name": name, "required": False, "description": description,
            "schema": {"type": "string", **schema}}


def _limit(config, maximum=None):
    maximum = min(maximum or config["MAX_PAGE_SIZE"], config["MAX_PAGE_SIZE"])
    return {"in": "query", "name": "limit", "required": False,
            "description": "page size (422 `invalid_limit` outside the range)",
            "schema": {"type": "integer", "minimum": 1, "maximum": maximum,
                       "default": min(config["DEFAULT_PAGE_SIZE"], maximum)}}


# format=openai export: the bare list that messages?format=openai returns under `messages`.
OPENAI_LIST = {"type": "array", "items": {"type": "object"}}
# One event of the stream (its `retry:` line and keep-alive comments carry no data).
SSE_EVENT = {
    "type": "object", "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["output", "reset", "end"]},
        "data": {"type": "string", "description": "a JSON object (docs/api.md, Live output)"},
        "id": {"type": "string", "description": "the event index; resume after it"},
        "retry": {"type": "integer"},
    },
}

SESSION_ID = {"in": "path", "name": "session_id", "required": True,
              "description": "the session's id, as returned when it was opened",
              "schema": {"type": "string"}}


def _json(schema):
    return {JSON: {"schema": schema}}


def operations(config):
    """(path, method, operation) for every route under /api; `config` bounds the limits."""
    limit = _limit(config)
    yield BASE, "post", {
        "operationId": "createSession", "summary": "Open a running session",
        "security": USER + RUNNER,
        "requestBody": {"required": True, "content": _json(schemas.SessionCreateSchema)},
        "responses": {201: ("the new session", _json(envelopes.SessionOpenedSchema))},
        "errors": error_responses(BODY, {413: "`request_entity_too_large` (body over"
                                              " MAX_CONTENT_LENGTH) or `context_too_large`",
                                         429: "`rate_limited`, or `quota_exceeded` (sessions per token"
                                              " per minute, running sessions per user, sessions per"
                                              " user per day; `details.quota` names it): wait"
                                              " `Retry-After` seconds"}),
    }
    yield BASE, "get", {
        "operationId": "listSessions", "summary": "Sessions the caller may read, newest first",
        "security": USER, "parameters": [_limit(config, config["SESSIONS_PAGE_MAX"]),
                                         _query("cursor", "next_cursor of the last page")],
        "responses": {200: ("one page of sessions", _json(envelopes.SessionPageSchema))},
        "errors": error_responses({422: "`invalid_limit` or `invalid_cursor`"}),
    }
    yield f"{BASE}/search", "get", {
        "operationId": "searchMessages", "summary": "Transcript rows holding every word of q",
        "security": USER,
        "parameters": [dict(_query("q", "the words to find (422 `invalid_query` when it has none)"),
                            required=True),
                       limit, _query("before", "next_cursor of the last page")],
        "responses": {200: ("matches, newest first", _json(envelopes.SearchPageSchema))},
        "errors": error_responses({422: "`invalid_query`, `invalid_limit` or `invalid_cursor`",
                                   503: "`search_timeout`: the query ran past"
                                        " SEARCH_TIMEOUT_SECONDS and was stopped (use rarer"
                                        " words); or `database_busy`"}),
    }
    yield f"{BASE}/{{session_id}}", "get", {
        "operationId": "getSession",
        "summary": "The session with its transcript (at most SESSION_MESSAGES_MAX messages)",
        "security": USER, "parameters": [SESSION_ID],
        "responses": {200: ("the session", _json(envelopes.SessionDetailEnvelopeSchema))},
        "errors": error_responses(NOT_FOUND),
    }
    yield f"{BASE}/{{session_id}}/messages", "get", {
        "operationId": "listMessages",
        "summary": "One page of the transcript, or all of it as OpenAI chat messages",
        "security": USER,
        "parameters": [SESSION_ID, limit, _query("after", "next_cursor of the last page"),
                       _query("format", "turnlog pages, or the whole transcript as openai",
                              enum=["turnlog", "openai"], default="turnlog"),
                       _query("include", "`tool_results`: each message with its turn's tool calls"
                                         " and results, and the tool-only turns among them"
                                         " (`tool_turns`); turnlog pages only", enum=["tool_results"])],
        "responses": {200: ("messages in write order", {JSON: {"schema": {"anyOf": [
            envelopes.MessagePageSchema, envelopes.MessageToolsPageSchema,
            envelopes.OpenAIMessagesSchema]}}})},
        "errors": error_responses(NOT_FOUND, {422: "`invalid_format`, `invalid_include`,"
                                                   " `invalid_limit` or `invalid_cursor`"}),
    }
    yield f"{BASE}/{{session_id}}/messages", "post", {
        "operationId": "sendInput",
        "summary": "Queue a prompt for the session's agent, once per client_message_id",
        "security": USER, "parameters": [SESSION_ID],
        "requestBody": {"required": True, "content": _json(schemas.InputSendSchema)},
        "responses": {202: ("queued now", _json(envelopes.InputEnvelopeSchema)),
                      200: ("queued before under this client_message_id: nothing written",
                            _json(envelopes.InputEnvelopeSchema))},
        "errors": error_responses(BODY, NOT_FOUND, CLIENT_WRITE, {
            403: "`wrong_token_kind`: a runner or a session's write token may not send input",
            409: "`session_completed`: the session takes no more input; `not_supported`: the"
                 " attached runner does not offer `send` (`details.control`)",
            413: "`request_entity_too_large` (body over MAX_CONTENT_LENGTH) or `input_too_large`"
                 " (content over MAX_INPUT_BYTES of UTF-8)",
            422: "`invalid_json` or `validation_error` (content empty or blank, client_message_id"
                 " empty or over 200 characters)"}),
    }
    yield f"{BASE}/{{session_id}}/evidence", "get", {
        "operationId": "listEvidence",
        "summary": "One page of the shell commands the agent ran, with their outcome",
        "security": USER,
        "parameters": [SESSION_ID, limit, _query("after", "next_cursor of the last page")],
        "responses": {200: ("evidence in the order the commands ran",
                            _json(envelopes.EvidencePageSchema))},
        "errors": error_responses(NOT_FOUND, {422: "`invalid_limit` or `invalid_cursor`"}),
    }
    yield f"{BASE}/{{session_id}}/export", "get", {
        "operationId": "exportSession", "summary": "The session as a file to download",
        "security": USER,
        "parameters": [SESSION_ID, _query("format", "the file's format",
                                          enum=list(exports.FORMATS), default="json")],
        "responses": {200: ("the file (Content-Disposition: attachment)", {
            JSON: {"schema": {"anyOf": [envelopes.SessionDetailEnvelopeSchema, OPENAI_LIST]}},
            "text/markdown": {"schema": {"type": "string"}},
        })},
        "errors": error_responses(NOT_FOUND, {422: "`invalid_format`"}),
    }
    yield f"{BASE}/{{session_id}}/stream", "get", {
        "operationId": "streamOutput",
        "summary": "The output buffer as Server-Sent Events, replayed then followed live",
        "security": USER,
        "parameters": [
            SESSION_ID,
            {"in": "header", "name": "Last-Event-ID", "required": False,
             "description": "resume after this event index (wins over `after`)",
             "schema": {"type": "string"}},
            _query("after", "resume after this event index"),
            _query("client_id", "a name whose delivered cursor the server keeps",
                   maxLength=MAX_CLIENT_ID),
        ],
        "responses": {200: ("`retry`, `output`, `reset`, keep-alive comments, and one `end`"
                            " when the session is over",
                            {"text/event-stream": {"schema": SSE_EVENT}})},
        "errors": error_responses(NOT_FOUND, {400: "`invalid_event_id`",
                                              422: "`invalid_client_id`"}),
    }
    yield f"{BASE}/{{session_id}}/events", "get", {
        "operationId": "streamLiveEvents",
        "summary": "Normalized live events (turns and their blocks) as Server-Sent Events",
        "security": USER,
        "parameters": [
            SESSION_ID,
            {"in": "header", "name": "Last-Event-ID", "required": False,
             "description": "resume after this event id, `<line>.<n>`, or after every event"
                            " of line `<line>` (-1: from the start); wins over `after`",
             "schema": {"type": "string"}},
            _query("after", "resume after this event id (as Last-Event-ID)"),
        ],
        "responses": {200: ("`retry`, the live events, `reset`, keep-alive comments, and one"
                            " `end` when the session is over",
                            {"text/event-stream": {"schema": LIVE_EVENT}})},
        "errors": error_responses(NOT_FOUND, {400: "`invalid_event_id`"}),
    }
    yield from _writes()
    yield from _control()


# The client writes of the control channel also take the viewer's cookie, with its
# CSRF token in the X-CSRF-Token header.
CLIENT_WRITE = {400: "`csrf_failed`: signed in by cookie, without the X-CSRF-Token header"}
COMMAND_CURSOR = [
    {"in": "header", "name": "Last-Event-ID", "required": False,
     "description": "resume after this command id (wins over `after`)", "schema": {"type": "string"}},
    _query("after", "send the unacknowledged commands after this command id"),
]
COMMAND_EVENT = {
    "type": "object", "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["command", "end"]},
        "data": {"type": "string", "description": "a command as JSON (docs/control.md): its body"
                                                  " with command_id, kind and created_at"},
        "id": {"type": "string", "description": "the command id; resume after it"},
        "retry": {"type": "integer"},
    },
}


def _control():
    yield f"{BASE}/{{session_id}}/runner", "post", {
        "operationId": "attachRunner", "summary": "Attach a runner and say what it offers",
        "security": RUNNER, "parameters": [SESSION_ID],
        "requestBody": {"required": True, "content": _json(schemas.RunnerAttachSchema)},
        "responses": {200: ("attached", _json(envelopes.RunnerEnvelopeSchema))},
        "errors": error_responses(BODY, NOT_FOUND),
    }
    yield f"{BASE}/{{session_id}}/commands", "get", {
        "operationId": "readCommands",
        "summary": "The runner's command channel: SSE (Accept: text/event-stream) or a long poll",
        "security": RUNNER,
        "parameters": [SESSION_ID, *COMMAND_CURSOR,
                       _query("wait", "long poll: seconds to wait for a command (0 to"
                                      " COMMAND_WAIT_MAX_SECONDS)", default="0")],
        "responses": {200: ("the commands (long poll), or `retry`, `command` events, keep-alive"
                            " comments and one `end` when the session completes (SSE)", {
                                JSON: {"schema": envelopes.CommandPollSchema},
                                "text/event-stream": {"schema": COMMAND_EVENT}})},
        "errors": error_responses(NOT_FOUND, {400: "`invalid_event_id`", 422: "`invalid_wait`",
                                              429: "`rate_limited`, or `too_many_streams` (SSE:"
                                                   " the process serves MAX_STREAMS_PER_PROCESS"
                                                   " streams): wait `Retry-After` seconds"}),
    }
    yield f"{BASE}/{{session_id}}/commands/{{command_id}}/ack", "post", {
        "operationId": "ackCommand", "summary": "The runner acted on a command (once; a repeat"
                                                " changes nothing)",
        "security": RUNNER,
        "parameters": [SESSION_ID, {"in": "path", "name": "command_id", "required": True,
                                    "schema": {"type": "integer"}}],
        "requestBody": {"required": True, "content": _json(schemas.CommandAckSchema)},
        "responses": {200: ("the command as acknowledged first", _json(envelopes.CommandEnvelopeSchema))},
        "errors": error_responses(BODY, NOT_FOUND, {404: "`session_not_found`, or"
                                                         " `command_not_found`"}),
    }
    yield f"{BASE}/{{session_id}}/permissions/{{request_id}}", "post", {
        "operationId": "answerPermission", "summary": "Allow or deny a tool call; the first answer wins",
        "security": USER,
        "parameters": [SESSION_ID, {"in": "path", "name": "request_id", "required": True,
                                    "schema": {"type": "string"}}],
        "requestBody": {"required": True, "content": _json(schemas.PermissionAnswerSchema)},
        "responses": {200: ("resolved by this answer", _json(envelopes.PermissionEnvelopeSchema))},
        "errors": error_responses(BODY, NOT_FOUND, CLIENT_WRITE, {
            403: "`wrong_token_kind`: a runner or a session's write token may not answer",
            404: "`session_not_found`, or `permission_not_found`",
            409: "`already_resolved`: answered, expired or withdrawn before"
                 " (`details.permission`: the resolution that won)"}),
    }
    for name, operation_id, summary in (
            ("interrupt", "interruptTurn", "Stop the agent's current turn; the session stays open"),
            ("stop", "stopAgent", "End the agent; the session completes with who stopped it")):
        yield f"{BASE}/{{session_id}}/{name}", "post", {
            "operationId": operation_id, "summary": summary, "security": USER,
            "parameters": [SESSION_ID],
            "requestBody": {"required": False, "content": _json(schemas.ControlRequestSchema)},
            "responses": {202: ("queued for the runner", _json(envelopes.CommandQueuedSchema))},
            "errors": error_responses(BODY, NOT_FOUND, CLIENT_WRITE, {
                403: f"`wrong_token_kind`: a runner or a session's write token may not {name}",
                409: "`session_completed`; `not_supported`: the attached runner does not offer"
                     f" `{name}`"}),
        }


def _writes():
    writes = [
        ("output", "appendOutput", "Buffer stdout lines and read them into turns",
         schemas.OutputBatchSchema, schemas.IngestReceiptSchema,
         {409: "`session_completed`: new output for a completed session; `seq_conflict`: a"
               " seq sent before with other content (`details.seq`; nothing of the batch is"
               " stored)",
          413: "`request_entity_too_large`, `too_many_chunks`, `line_too_long` or"
               " `session_output_limit` (the session's MAX_SESSION_OUTPUT_BYTES; nothing of the batch"
               " is stored)",
          429: "`rate_limited`, or `quota_exceeded` (`details.quota` ="
               " `output_bytes_per_user_per_day`: the owner's MAX_OUTPUT_BYTES_PER_USER_PER_DAY;"
               " nothing of the batch is stored): wait `Retry-After` seconds (the UTC day's end)"}),
        ("complete", "completeSession", "Flush the open turn and close the session",
         schemas.CompleteSchema, envelopes.SessionEnvelopeSchema, {}),
        ("usage", "recordUsage", "Count a usage report once per report_id",
         schemas.UsageReportSchema, envelopes.UsageReceiptSchema, {}),
        ("usage-reports", "recordUsageReports",
         "Count several usage reports, each once per report_id, in one transaction",
         schemas.UsageReportsSchema, envelopes.UsageReceiptsSchema, {}),
    ]
    for name, operation_id, summary, body, receipt, errors in writes:
        yield f"{BASE}/{{session_id}}/{name}", "post", {
            "operationId": operation_id, "summary": summary, "security": RUNNER,
            "parameters": [SESSION_ID],
            "requestBody": {"required": True, "content": _json(body)},
            "responses": {200: ("done", _json(receipt))},
            "errors": error_responses(BODY, NOT_FOUND, errors),
        }
