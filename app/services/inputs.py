"""Inputs to a live session: a person's prompts, queued durably and exactly once.

A prompt is sent by the session's owner, or an admin, with a user token; the
sender names it (`client_message_id`), so a retried send finds the input the first
one queued and writes nothing. Delivery to the agent is the runner's (issue 30).
"""
from dataclasses import dataclass

from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import InputTooLarge
from app.core.errors import NotPermitted
from app.core.errors import SessionClosed
from app.core.inputs import input_uuid
from app.services import control
from app.services.access import OPEN
from app.services.access import USER
from app.services.sessions import readable_session


@dataclass(frozen=True)
class Sent:
    """What a send did: the input, and whether this call queued it (False: a repeat)."""

    input: object
    created: bool
    runner_attached: bool = False


def send_input(session_id, content, client_message_id, uow, *, caller=OPEN, max_bytes,
               clock=utc_now, settings=control.Settings()):
    """Queue `content` for the session's agent, once per `client_message_id`.

    Another user's session is SessionNotFound; a runner or a session's write token is
    NotPermitted (an agent must not prompt itself). A repeat returns the input queued
    first, whatever the session's state now; a new input to a completed session is
    SessionClosed, and one over `max_bytes` of UTF-8 InputTooLarge; NotSupported when
    the attached runner does not offer `send`. A new input is queued with its `input`
    command for the runner, in one transaction.
    """
    if not (caller.is_open or caller.kind == USER):
        raise NotPermitted("only the session's owner or an admin may send it input",
                           {"token_kind": caller.kind})
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise InputTooLarge(f"an input may hold at most {max_bytes} bytes of UTF-8",
                            {"bytes": size, "limit": max_bytes})
    with uow:
        session = readable_session(uow, session_id, caller)
        existing = uow.inputs.find(session_id, client_message_id)
        now = clock()
        attached = control.seen_within(uow.runners.presence(session_id)[1], now,
                                       settings.attached_seconds)
        if existing is not None:
            return Sent(existing, False, attached)
        if session.is_completed:
            raise SessionClosed(f"session {session_id} is completed and takes no more input",
                                {"session_id": session_id, "status": session.status})
        control.check_offered(uow, session_id, "input", now, settings)
        added = uow.inputs.add_if_new(session_id, client_message_id, content, caller.name,
                                      to_iso(now))
        if added is None:  # a concurrent send of the same id won (committed, as the
            # insert waited for it; the next statement sees it): answer with its input
            return Sent(uow.inputs.find(session_id, client_message_id), False, attached)
        uow.commands.add(session_id, "input", {"input_id": added.input_id,
                                               "uuid": input_uuid(session_id, added.input_id),
                                               "content": content}, caller.name, to_iso(now))
        uow.commit()
    return Sent(added, True, attached)


def pending_inputs(session_id, uow, *, caller=OPEN):
    """The session's inputs not yet applied (queued, delivered or failed), oldest first:
    what a reader shows as sent and waiting. Another user's session is SessionNotFound."""
    with uow:
        readable_session(uow, session_id, caller)
        return uow.inputs.list_pending(session_id)
