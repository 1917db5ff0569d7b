"""The send-input use case against in-memory fakes: who may send, repeats, limits."""
from datetime import datetime
from datetime import timezone

import pytest

from app.core.clock import to_iso
from app.core.errors import InputTooLarge
from app.core.errors import NotPermitted
from app.core.errors import NotSupported
from app.core.errors import SessionClosed
from app.core.errors import SessionNotFound
from app.core.inputs import input_uuid
from app.services import inputs
from app.services.access import Caller
from tests.fakes import FakeUnitOfWork

ALICE = Caller("user", "alice")
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture
def uow():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", "alice", "agent", {}, "claude", "t0", machine="m1")
    return uow


def send(uow, client_id="c-1", content="hi", caller=ALICE, max_bytes=100):
    return inputs.send_input("s1", content, client_id, uow, caller=caller, max_bytes=max_bytes,
                             clock=lambda: NOW)


def test_an_input_is_queued_once_and_committed(uow):
    sent = send(uow)
    assert sent.created
    assert (sent.input.state, sent.input.created_by) == ("queued", "alice")
    assert sent.input.created_at.startswith("2026-01-02T03:04:05")
    assert uow.commits == 1
    again = send(uow, content="other")
    assert (again.created, again.input) == (False, sent.input)
    assert uow.commits == 1
    assert [row.content for row in uow.inputs.rows] == ["hi"]


@pytest.mark.parametrize("caller", [Caller("runner", "m1"), Caller("runner", "m1", session_id="s1")])
def test_runners_and_write_tokens_may_not_send(uow, caller):
    with pytest.raises(NotPermitted):
        send(uow, caller=caller)
    assert uow.inputs.rows == []


def test_another_user_finds_no_session_and_an_admin_may_send(uow):
    with pytest.raises(SessionNotFound):
        send(uow, caller=Caller("user", "bob"))
    assert send(uow, caller=Caller("user", "root", is_admin=True)).created


def test_the_limit_counts_utf8_bytes(uow):
    with pytest.raises(InputTooLarge):
        send(uow, content="€" * 34)  # 102 bytes
    assert send(uow, content="€" * 33 + "x").created  # 100 bytes


def test_a_completed_session_takes_repeats_only(uow):
    first = send(uow, client_id="before")
    uow.sessions.mark_completed("s1", "completed", 0, "t1")
    with pytest.raises(SessionClosed):
        send(uow, client_id="after")
    assert send(uow, client_id="before").input == first.input


def test_a_new_input_queues_its_command_for_the_runner(uow):
    sent = send(uow)
    [command] = uow.commands.rows
    assert (command.kind, command.created_by) == ("input", "alice")
    assert command.body == {"input_id": sent.input.input_id, "content": "hi",
                            "uuid": input_uuid("s1", sent.input.input_id)}
    send(uow)  # a repeat queues nothing
    assert len(uow.commands.rows) == 1
    assert sent.runner_attached is False


def test_an_attached_runner_without_send_refuses_the_input(uow):
    uow.runners.attach("s1", ["permissions"], to_iso(NOW))
    with pytest.raises(NotSupported) as err:
        send(uow)
    assert err.value.details["control"] == "send"
    assert uow.inputs.rows == [] and uow.commands.rows == [] and uow.commits == 0


def test_an_attached_runner_with_send_is_reported(uow):
    uow.runners.attach("s1", ["send"], to_iso(NOW))
    assert send(uow).runner_attached is True


def test_pending_inputs_lists_the_unapplied_ones_to_readers_only(uow):
    send(uow, "c-1", "first")
    send(uow, "c-2", "second")
    applied = uow.inputs.find("s1", "c-1")
    uow.inputs.mark_applied("s1", [applied.input_id], "t1")
    assert [i.content for i in inputs.pending_inputs("s1", uow, caller=ALICE)] == ["second"]
    with pytest.raises(SessionNotFound):
        inputs.pending_inputs("s1", uow, caller=Caller("user", "bob"))
