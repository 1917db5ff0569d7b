"""The token commands: print a token once, keep its hash, list, revoke."""
import pytest

from app.db import reading
from app.db import writing
from app.services import sessions
from app.services import tokens


def test_create_runner_token_prints_it_once_and_stores_its_hash(runner, rows):
    result = runner.invoke(args=["create-runner-token", "--machine", "build-7", "--any-user"])
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert secret.startswith("tlr_") and len(secret) > 40
    assert rows("SELECT kind, name, is_admin, token_hash, revoked_at, allowed_users, expires_at"
                " FROM agent_tokens") == [
        ("runner", "build-7", 0, tokens.hash_token(secret), None, None, None)]


def test_a_runner_token_must_say_whom_it_serves(runner, rows):
    for args in ([], ["--user", "alice", "--any-user"]):
        result = runner.invoke(args=["create-runner-token", "--machine", "m1", *args])
        assert result.exit_code == 2
        assert "give --user U (one or more) or --any-user" in result.output
    assert rows("SELECT COUNT(*) FROM agent_tokens") == [(0,)]


def test_a_scoped_expiring_runner_token(runner, rows):
    result = runner.invoke(args=["create-runner-token", "--machine", "m1", "--user", "alice",
                                 "--user", "bob", "--expires-in", "12h"])
    assert result.exit_code == 0, result.output
    ((users, created, expires),) = rows("SELECT allowed_users, created_at, expires_at FROM agent_tokens")
    assert users == '["alice", "bob"]'
    assert created[:10] <= expires[:10] and expires > created
    listing = runner.invoke(args=["list-tokens"]).stdout.splitlines()
    assert listing[1].split("\t")[4:] == ["users alice,bob", created, expires, "active"]


@pytest.mark.parametrize("value", ["0", "-5m", "soon", "12y"])
def test_a_bad_duration_is_refused(runner, rows, value):
    result = runner.invoke(args=["create-user-token", "--user", "a", "--expires-in", value])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert rows("SELECT COUNT(*) FROM agent_tokens") == [(0,)]


def test_create_user_token_with_admin(runner, rows):
    result = runner.invoke(args=["create-user-token", "--user", "ops", "--admin"])
    assert result.exit_code == 0
    assert result.stdout.strip().startswith("tlu_")
    assert rows("SELECT kind, name, is_admin FROM agent_tokens") == [("user", "ops", 1)]


@pytest.mark.parametrize("name", ["   ", "a\x00b", "bad\udcff"])
def test_a_blank_or_unstorable_name_is_refused(runner, rows, name):
    result = runner.invoke(args=["create-user-token", "--user", name])
    assert result.exit_code != 0
    assert "name must be 1 to 200 characters" in result.output
    assert "Traceback" not in result.output
    assert rows("SELECT COUNT(*) FROM agent_tokens") == [(0,)]


def test_list_and_revoke(runner, rows):
    runner.invoke(args=["create-runner-token", "--machine", "m1", "--any-user"])
    runner.invoke(args=["create-user-token", "--user", "alice"])
    header, *listing = runner.invoke(args=["list-tokens"]).stdout.splitlines()
    assert header.split("\t") == ["id", "kind", "name", "admin", "scope", "created", "expires", "state"]
    assert [line.split("\t")[:5] for line in listing] == [
        ["1", "runner", "m1", "-", "any user"], ["2", "user", "alice", "-", "own sessions"]]
    assert all(line.endswith("active") for line in listing)
    assert "tlr_" not in "".join(listing)

    revoked = runner.invoke(args=["revoke-token", "1"])
    assert revoked.exit_code == 0 and "revoked token 1" in revoked.output
    assert rows("SELECT id FROM agent_tokens WHERE revoked_at IS NOT NULL") == [(1,)]
    again = runner.invoke(args=["revoke-token", "1"])
    assert again.exit_code != 0 and "no active token with id 1" in again.output


def test_session_tokens_are_listed_under_their_runner_token(app, runner, rows):
    def open_with(secret):
        caller = tokens.caller_for_secret(secret, reading())
        return sessions.open_session({"session_type": "agent", "user_id": "alice"}, writing(),
                                     caller=caller).session_id

    m1 = tokens.issue("runner", "m1", writing())[1]
    tokens.issue("user", "alice", writing())
    m2 = tokens.issue("runner", "m2", writing())[1]
    first, second, third = open_with(m1), open_with(m2), open_with(m1)  # tokens 4, 5, 6
    orphan = open_with(m2)  # token 7, its session as from before migration 0016
    rows("UPDATE agent_sessions SET opened_by_token = NULL WHERE session_id = ?", orphan)
    assert runner.invoke(args=["revoke-token", "1"]).exit_code == 0

    _, *listing = runner.invoke(args=["list-tokens"]).stdout.splitlines()
    columns = [line.split("\t") for line in listing]
    assert [(c[0], c[1], c[2], c[4]) for c in columns] == [
        ("1", "runner", "m1", "any user"),
        ("4", "└ session", "m1", f"session {first}"),
        ("6", "└ session", "m1", f"session {third}"),
        ("2", "user", "alice", "own sessions"),
        ("3", "runner", "m2", "any user"),
        ("5", "└ session", "m2", f"session {second}"),
        ("7", "session", "m2", f"session {orphan}"),
    ]
    states = {c[0]: c[7] for c in columns}
    assert states["1"].startswith("revoked ")
    assert states["4"] == states["6"] == "stopped with token 1"
    assert states["5"] == states["7"] == "active"
