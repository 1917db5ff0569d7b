"""The session page's controls (docs/viewer.md), as its templates and its state JSON
show them: the composer's buttons and why one is off, the prompts sent and not yet
applied, and one card per pending permission. Pure: no Flask.

static/control.js keeps them up to date from the same JSON (`control_state`, its
`note` included), so the page first drawn and the page kept live say the same thing in
the same words.
"""
import json
from dataclasses import dataclass

from app.core.inputs import input_uuid

# The composer's buttons, in their order on the page; `permissions` is the cards' control.
BUTTONS = (("send", "Send"), ("interrupt", "Interrupt"), ("stop", "Stop"))
LABELS = {**dict(BUTTONS), "permissions": "Answers"}
# A tool input's field shown as code on its card, by the tools that name a command so.
COMMAND_KEYS = ("command", "cmd")
DETAIL_KEYS = ("description", "file_path", "path", "url", "pattern")


@dataclass(frozen=True)
class Button:
    name: str
    label: str
    enabled: bool
    reason: str  # "" when enabled


@dataclass(frozen=True)
class PermissionCard:
    request_id: str
    tool_name: str
    command: str | None  # shown as code (a Bash command); None: the input is shown as JSON
    detail: str | None  # the input's description or path, when it has one
    input_json: str
    requested_at: str
    expires_at: str | None


@dataclass(frozen=True)
class Outgoing:
    """A prompt sent to the session and not applied yet (queued, delivered or failed)."""

    input_id: int
    client_message_id: str
    content: str
    state: str
    reason: str | None
    uuid: str  # the uuid of its row-to-be (`data-input-uuid` of the user bubble)


def buttons(controls):
    """The composer's buttons, each on or off with the reason it is off."""
    reasons = controls.get("reasons") or {}
    return [Button(name, label, bool(controls.get(name)), reasons.get(name, ""))
            for name, label in BUTTONS]


def unavailable_note(controls, stopped_by=None):
    """One line saying what cannot be done and why: one reason once when every control
    shares it ("the session is completed"), else each control with its own."""
    reasons = controls.get("reasons") or {}
    note = ""
    if reasons:
        distinct = set(reasons.values())
        if len(distinct) == 1 and len(reasons) == len(LABELS):
            note = f"Unavailable: {distinct.pop()}."
        else:
            note = "; ".join(f"{LABELS.get(name, name)}: {why}" for name, why in reasons.items()) + "."
    if stopped_by:
        note = f"{note} Stopped by {stopped_by}.".strip()
    return note


def permission_card(permission):
    """The card of a pending SessionPermission."""
    tool_input = permission.tool_input if isinstance(permission.tool_input, dict) else {}
    command = next((tool_input[k] for k in COMMAND_KEYS if isinstance(tool_input.get(k), str)), None)
    detail = next((tool_input[k] for k in DETAIL_KEYS
                   if isinstance(tool_input.get(k), str) and tool_input[k].strip()), None)
    return PermissionCard(permission.request_id, permission.tool_name or "tool", command, detail,
                          json.dumps(permission.tool_input, indent=2, ensure_ascii=False,
                                     default=str),
                          permission.requested_at, permission.expires_at)


def outgoing(session_id, inputs):
    """The session's inputs not yet applied, as the page's sent bubbles."""
    return [Outgoing(i.input_id, i.client_message_id, i.content, i.state, i.reason,
                     input_uuid(session_id, i.input_id)) for i in inputs]


def control_state(session, inputs):
    """The page's controls JSON: the session's status, `controls` (as the API's
    session GET has them) with the note the page shows, the inputs not yet applied
    (a prompt sent from elsewhere is shown too) and the pending requests' ids."""
    controls = session.controls or {}
    return {
        "status": session.status,
        "controls": controls,
        "note": unavailable_note(controls, session.stopped_by),
        "stopped_by": session.stopped_by,
        "inputs": [{"input_id": o.input_id, "client_message_id": o.client_message_id,
                    "content": o.content, "state": o.state, "reason": o.reason, "uuid": o.uuid}
                   for o in outgoing(session.session_id, inputs)],
        "pending_permissions": [p.request_id for p in session.pending_permissions],
    }
