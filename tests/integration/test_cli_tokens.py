"""The token commands: print a token once, keep its hash, list, revoke."""
import pytest

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
