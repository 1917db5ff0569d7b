"""What ingest derives for the control channel from the agent's lines (docs/control.md):
the inputs a prompt echo shows the agent took, and the permission requests it
records, withdraws and announces. Runs inside ingest's transaction, the session
locked; a request with none of these lines costs no statement here.
"""
from app.core.clock import iso_after
from app.core.inputs import input_uuid

WITHDRAWN_BY = "agent"  # who resolved a request the agent withdrew itself
# The answer the agent was given, by how its request was resolved (expired: denied).
BEHAVIORS = {"allowed": "allow", "denied": "deny", "expired": "deny"}


def apply_prompts(uow, session_id, uuids, stamp):
    """Mark applied the session's inputs whose uuid a prompt echo carried."""
    wanted = set(uuids)
    taken = [item.input_id for item in uow.inputs.list_pending(session_id)
             if input_uuid(session_id, item.input_id) in wanted]
    if taken:
        uow.inputs.mark_applied(session_id, taken, stamp)


def apply_controls(uow, session_id, controls, now, stamp, timeout_seconds):
    """Record each control line (`controls`: (event index, {"op", ...})) and return
    its live events, one list per line: a request recorded now is announced, a
    request seen before (a re-sent line) is not."""
    expires_at = iso_after(now, timeout_seconds) if timeout_seconds else None
    return [_apply(uow, session_id, event_index, control, stamp, expires_at)
            for event_index, control in controls]


def _apply(uow, session_id, event_index, control, stamp, expires_at):
    op, request_id = control["op"], control["request_id"]
    if op == "permission_request":
        added = uow.permissions.add_if_new(session_id, request_id, control["tool_name"],
                                           control["input"], event_index, stamp, expires_at)
        if added is None:
            return []
        return [("permission.requested", {
            "request_id": request_id, "tool_name": added.tool_name, "input": added.tool_input,
            "expires_at": added.expires_at})]
    if op == "permission_withdrawn":
        if not uow.permissions.resolve_if_pending(session_id, request_id, "cancelled", None,
                                                  WITHDRAWN_BY, stamp):
            return []
        return [resolved_event(request_id, "cancelled", None, None, WITHDRAWN_BY, stamp)]
    # permission_resolved: the server's own line, written when it was answered or expired.
    # Announced as the database has it, and only when it is resolved there: the agent
    # prints on the same stdout, and a line it forged must not show an answer nobody gave.
    stored = uow.permissions.find(session_id, request_id)
    if stored is None or stored.state == "pending":
        return []
    return [resolved_event(request_id, stored.state, BEHAVIORS.get(stored.state),
                           stored.message, stored.resolved_by, stored.resolved_at)]


def resolved_event(request_id, state, behavior, message, resolved_by, resolved_at):
    """The live `permission.resolved` event of a request."""
    return ("permission.resolved", {
        "request_id": request_id, "state": state, "behavior": behavior, "message": message,
        "resolved_by": resolved_by, "resolved_at": resolved_at})
