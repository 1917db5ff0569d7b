"""Lines of the control channel (docs/control.md): prompts the agent took, permission
requests and their ends, interrupted turns. Claude prints its own (`isReplay` user
echoes, `control_request` / `control_cancel_request`, `control_response`,
`command_lifecycle`); a runner writes the neutral `turnlog.*` lines for the agents
that lack them, and the server writes `turnlog.permission_resolved` itself. Every
provider's parser reads the neutral lines (NEUTRAL_PARSERS).
"""
from app.providers.decode import text_of
from app.transcript.event_types import CONTROL
from app.transcript.event_types import IGNORED
from app.transcript.event_types import RESULT
from app.transcript.event_types import USER_PROMPT
from app.transcript.event_types import StreamEvent
from app.transcript.event_types import ignored

# What a `turnlog.interrupted` line closes its turn with: the result Claude prints
# after an interrupt says the same (terminal_reason "aborted_streaming").
INTERRUPTED_RESULT = {"subtype": "interrupted", "is_error": False,
                      "terminal_reason": "aborted_streaming"}
RESOLVED_FIELDS = ("state", "behavior", "message", "resolved_by", "resolved_at")


def prompt_text(content):
    """The text of a user message's content (a string, or text blocks), or None when
    it holds anything else (tool results) or no text at all."""
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            return None
        texts.append(text_of(block.get("text")))
    return "\n\n".join(texts) or None


def prompt(uuid, content):
    """A prompt event, or an ignored one when it has no uuid or no text."""
    text = prompt_text(content)
    if not isinstance(uuid, str) or not uuid or text is None:
        return ignored("user_prompt")
    return StreamEvent(USER_PROMPT, identity=uuid, text=text, info={"uuid": uuid})


def control(op, **fields):
    """An event the turn ignores and ingest records: {"op": op, **fields}."""
    return StreamEvent(IGNORED, info={"reason": op, CONTROL: {"op": op, **fields}})


def permission_request(request_id, tool_name, tool_input):
    """A permission request, or an ignored line when it names no request."""
    if not isinstance(request_id, str) or not request_id:
        return ignored("no_request_id")
    return control("permission_request", request_id=request_id,
                   tool_name=text_of(tool_name) or "unknown",
                   input=tool_input if isinstance(tool_input, dict) else {})


def permission_withdrawn(request_id):
    """The agent withdrew a request (it is resolved as cancelled)."""
    if not isinstance(request_id, str) or not request_id:
        return ignored("no_request_id")
    return control("permission_withdrawn", request_id=request_id)


# Claude's own lines.

def parse_control_request(obj):
    """Claude's `control_request`: a permission request when its subtype is
    `can_use_tool`; any other subtype says nothing to the transcript."""
    request = obj.get("request")
    if not isinstance(request, dict) or request.get("subtype") != "can_use_tool":
        return ignored("control_request")
    return permission_request(obj.get("request_id"), request.get("tool_name"),
                              request.get("input"))


def parse_control_cancel(obj):
    """Claude's `control_cancel_request`: the request it names is withdrawn."""
    return permission_withdrawn(obj.get("request_id"))


# The neutral lines.

def parse_user(obj):
    """`turnlog.user`: the agent took the prompt `content` under `uuid`."""
    return prompt(obj.get("uuid"), obj.get("content"))


def parse_permission_request(obj):
    """`turnlog.permission_request`: the agent asks to run `tool_name` with `input`."""
    return permission_request(obj.get("request_id"), obj.get("tool_name"), obj.get("input"))


def parse_permission_withdrawn(obj):
    """`turnlog.permission_withdrawn`: the agent no longer waits for the answer."""
    return permission_withdrawn(obj.get("request_id"))


def parse_permission_resolved(obj):
    """`turnlog.permission_resolved`, written by the server when a request was
    answered or expired: announced live as stored (ingest checks that it is resolved),
    nothing stored but the line."""
    request_id = obj.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        return ignored("no_request_id")
    fields = {key: obj.get(key) if isinstance(obj.get(key), str) else None
              for key in RESOLVED_FIELDS}
    return control("permission_resolved", request_id=request_id, **fields)


def parse_interrupted(obj):
    """`turnlog.interrupted`: the open turn ends, interrupted."""
    return StreamEvent(RESULT, info=dict(INTERRUPTED_RESULT))


NEUTRAL_PARSERS = {
    "turnlog.user": parse_user,
    "turnlog.permission_request": parse_permission_request,
    "turnlog.permission_withdrawn": parse_permission_withdrawn,
    "turnlog.permission_resolved": parse_permission_resolved,
    "turnlog.interrupted": parse_interrupted,
}
