"""The events of GET .../events in the OpenAPI document (docs/api.md, Live events)."""


def _payload(required, **optional):
    """A live event's `data` object: its required fields, then the optional ones."""
    fields = {name: {} for name in required}
    fields.update(optional)
    return {"type": "object", "required": list(required), "properties": fields}


STRING, INTEGER, OBJECT = {"type": "string"}, {"type": "integer"}, {"type": "object"}
BLOCK_KIND = {"type": "string", "enum": ["text", "thinking", "tool_use", "tool_result",
                                         "reasoning"]}
# The `data` of each event of GET .../events (docs/api.md, Live events).
LIVE_PAYLOADS = {
    "turn.started": _payload(["turn_id", "started_at", "event_index"]),
    "block.started": _payload(["turn_id", "block_id", "kind"], kind=BLOCK_KIND,
                              tool_name=STRING, call_id=STRING,
                              # a Claude sub-agent's block: the Task call that started it
                              parent_tool_use_id=STRING),
    "block.delta": _payload(["turn_id", "block_id", "text"], text=STRING),
    "block.completed": _payload(["turn_id", "block_id", "kind", "block"], kind=BLOCK_KIND,
                                block=OBJECT),
    "usage": _payload(["turn_id", "usage"], usage=OBJECT),
    "turn.completed": _payload(["turn_id", "terminal_reason", "usage", "message_id",
                                "transcript_turn_id"],
                               message_id={"type": "integer", "nullable": True},
                               transcript_turn_id={"type": "string", "nullable": True},
                               # present (true) only when someone interrupted the turn
                               interrupted={"type": "boolean"}),
    "session.completed": _payload(["status", "exit_code"]),
    # The control channel (docs/control.md): a tool call the agent asks a person to allow,
    # and its end (allowed, denied, expired, or cancelled: the agent withdrew it).
    "permission.requested": _payload(["request_id", "tool_name", "input", "expires_at"],
                                     request_id=STRING, tool_name=STRING, input=OBJECT,
                                     expires_at={"type": "string", "nullable": True}),
    "permission.resolved": _payload(["request_id", "state", "behavior", "message",
                                     "resolved_by", "resolved_at"],
                                    request_id=STRING,
                                    state={"type": "string", "enum": [
                                        "allowed", "denied", "expired", "cancelled"]},
                                    behavior={"type": "string", "nullable": True,
                                              "enum": ["allow", "deny", None]},
                                    message={"type": "string", "nullable": True},
                                    resolved_by={"type": "string", "nullable": True},
                                    resolved_at={"type": "string", "nullable": True}),
    "reset": _payload(["reason", "requested_after", "oldest_event_index", "transcript"]),
    "end": _payload(["status", "exit_code", "last_event_id"]),
}
LIVE_EVENT = {"oneOf": [
    {"type": "object", "required": ["event", "data"],
     "properties": {"event": {"type": "string", "enum": [name]},
                    "id": {"type": "string", "description": "<line index>.<n>; resume after it"},
                    # SSE data is text: the object it holds is described, not validated.
                    "data": {"type": "string", "x-json-schema": payload,
                             "description": f"`{name}`: JSON text of an object with"
                                            f" {', '.join(payload['required'])}"}}}
    for name, payload in LIVE_PAYLOADS.items()
]}
