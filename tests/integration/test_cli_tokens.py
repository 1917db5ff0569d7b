"""The token commands: print a token once, keep its hash, list, revoke."""
import pytest

from app.services import tokens


def test_create_runner_token_prints_it_once_and_stores_its_hash(runner, rows):
    result = runner.invoke(args=["create-runner-token", "--machine", "build-7"])
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert secret.startswith("tlr_") and len(secret) > 40
    assert rows("SELECT kind, name, is_admin, token_hash, revoked_at FROM agent_tokens") == [
        ("runner", "build-7", 0, tokens.hash_token(secret), None)]


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
    runner.invoke(args=["create-runner-token", "--machine", "m1"])
    runner.invoke(args=["create-user-token", "--user", "alice"])
    listing = runner.invoke(args=["list-tokens"]).stdout.splitlines()
    assert [line.split("\t")[:4] for line in listing] == [
        ["1", "runner", "m1", "-"], ["2", "user", "alice", "-"]]
    assert all(line.endswith("active") for line in listing)
    assert "tlr_" not in "".join(listing)

    revoked = runner.invoke(args=["revoke-token", "1"])
    assert revoked.exit_code == 0 and "revoked token 1" in revoked.output
    assert rows("SELECT id FROM agent_tokens WHERE revoked_at IS NOT NULL") == [(1,)]
    again = runner.invoke(args=["revoke-token", "1"])
    assert again.exit_code != 0 and "no active token with id 1" in again.output
