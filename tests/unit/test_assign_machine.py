"""sessions.assign_machine with fakes: who may write a session after an operator assigns it."""
from datetime import datetime
from datetime import timezone

import pytest

from app.core.errors import InvalidMachine
from app.core.errors import SessionNotFound
from app.core.records import Chunk
from app.services import ingest
from app.services import sessions
from app.services.access import RUNNER
from app.services.access import Caller
from tests.fakes import FakeUnitOfWork

M1 = Caller(RUNNER, "m1")
T1 = datetime(2026, 1, 2, tzinfo=timezone.utc)


@pytest.fixture
def uow():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", "alice", "agent", {}, "claude", "t0")  # no machine
    return uow


def send(uow, caller, seq=0):
    return ingest.ingest_output("s1", [Chunk("x", "stdout", seq)], uow, caller=caller,
                                retention_seconds=60)


def test_the_refusal_is_a_404_naming_nothing_and_the_log_names_the_fix(uow, caplog):
    with pytest.raises(SessionNotFound) as refused:
        send(uow, M1)
    assert refused.value.details == {"session_id": "s1"}
    assert refused.value.message == "no session s1"
    assert "flask --app wsgi assign-machine s1 --machine m1" in caplog.text
    assert "has no machine" in caplog.text
    assert uow.outputs.rows == []


def test_assigning_lets_that_machines_runner_write(uow):
    previous, session = sessions.assign_machine("s1", " m1 ", uow, clock=lambda: T1)
    assert (previous, session.machine) == (None, "m1")
    assert uow.sessions.rows["s1"].updated_at == "2026-01-02T00:00:00.000000Z"
    assert uow.commits == 1
    assert send(uow, M1).accepted == 1


def test_reassigning_returns_the_old_machine_and_locks_it_out(uow):
    sessions.assign_machine("s1", "m1", uow)
    previous, session = sessions.assign_machine("s1", "m2", uow)
    assert (previous, session.machine) == ("m1", "m2")
    with pytest.raises(SessionNotFound) as refused:
        send(uow, M1)
    assert refused.value.details == {"session_id": "s1"}


def test_an_unknown_session_is_not_found(uow):
    with pytest.raises(SessionNotFound):
        sessions.assign_machine("missing", "m1", uow)
    assert uow.commits == 0


@pytest.mark.parametrize("machine", ["", "   ", "m" * 201, "a\x00b", "bad\udcff"])
def test_an_unusable_machine_name_is_refused(uow, machine):
    with pytest.raises(InvalidMachine):
        sessions.assign_machine("s1", machine, uow)
    assert uow.sessions.rows["s1"].machine is None


def test_a_machine_name_with_spaces_is_quoted_in_the_fix(uow, caplog):
    with pytest.raises(SessionNotFound):
        send(uow, Caller(RUNNER, "build box"))
    assert "--machine 'build box'`" in caplog.text
