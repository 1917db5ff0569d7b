"""assign-machine: a session with no machine (opened before migration 0008, or by a
user who named none) refuses every runner until an operator assigns it."""
import pytest

from app.core.errors import SessionNotFound
from app.core.records import Chunk
from app.db import reading
from app.db import writing
from app.services import ingest
from app.services import sessions
from app.services import tokens
from tests import claude_lines as cl
from tests.integration.conftest import RETENTION_SECONDS


@pytest.fixture
def runner_of(runner, app):
    """runner_of(machine) -> the Caller of a new runner token made by the CLI."""
    def make(machine):
        result = runner.invoke(args=["create-runner-token", "--machine", machine, "--any-user"])
        assert result.exit_code == 0, result.output
        return tokens.caller_for_secret(result.stdout.strip(), reading())
    return make


def post(caller, session_id, seq):
    chunks = [Chunk(cl.assistant(cl.text(f"line {seq}")), "stdout", seq)]
    return ingest.ingest_output(session_id, chunks, writing(), caller=caller,
                                retention_seconds=RETENTION_SECONDS)


def test_a_session_without_machine_takes_its_runner_once_assigned(runner, runner_of, rows,
                                                                   caplog):
    build7 = runner_of("build-7")
    sid = sessions.open_session({"session_type": "agent", "user_id": "alice"},
                                writing()).session_id
    assert rows("SELECT machine FROM agent_sessions WHERE session_id = ?", sid) == [(None,)]
    with pytest.raises(SessionNotFound) as refused:
        post(build7, sid, 0)
    assert refused.value.details == {"session_id": sid}
    assert f"flask --app wsgi assign-machine {sid} --machine build-7" in caplog.text
    assert "has no machine" in caplog.text

    result = runner.invoke(args=["assign-machine", sid, "--machine", "build-7"])
    assert result.exit_code == 0, result.output
    assert f"session {sid} (running) assigned to machine 'build-7'; it had no machine" in (
        result.output)
    assert rows("SELECT machine FROM agent_sessions WHERE session_id = ?", sid) == [("build-7",)]
    assert post(build7, sid, 0).accepted == 1
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?", sid) == [(1,)]


def test_reassigning_moves_the_session_to_the_other_machine(runner, runner_of, rows, caplog):
    old, new = runner_of("m1"), runner_of("m2")
    sid = sessions.open_session({"session_type": "agent", "machine": "m1"}, writing()).session_id
    assert post(old, sid, 0).accepted == 1

    result = runner.invoke(args=["assign-machine", sid, "--machine", "m2"])
    assert result.exit_code == 0, result.output
    assert "assigned to machine 'm2'; it had machine 'm1'" in result.output
    with pytest.raises(SessionNotFound):
        post(old, sid, 1)
    assert "belongs to machine 'm2'" in caplog.text
    assert post(new, sid, 1).accepted == 1


def test_an_unknown_session_is_a_clear_error_and_changes_nothing(runner, rows):
    sid = sessions.open_session({"session_type": "agent"}, writing()).session_id
    result = runner.invoke(args=["assign-machine", "no-such-session", "--machine", "m1"])
    assert result.exit_code != 0
    assert "no session no-such-session" in result.output
    assert rows("SELECT machine FROM agent_sessions WHERE session_id = ?", sid) == [(None,)]


def test_a_blank_machine_is_refused(runner, rows):
    sid = sessions.open_session({"session_type": "agent", "machine": "m1"}, writing()).session_id
    result = runner.invoke(args=["assign-machine", sid, "--machine", "  "])
    assert result.exit_code != 0
    assert "machine must be 1 to 200 characters" in result.output
    assert rows("SELECT machine FROM agent_sessions WHERE session_id = ?", sid) == [("m1",)]
