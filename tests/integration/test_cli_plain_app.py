"""Every operator command runs through `app.test_cli_runner()` on an app built here,
with no app context pushed by anyone: the commands push their own (with_appcontext).

These tests take `database_url`, never the `app` fixture, so pytest-flask pushes no
request context for them."""
import pytest
from flask import has_app_context

from app import create_app
from app.extensions import db


@pytest.fixture
def plain_app(database_url, tmp_path):
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": database_url,
                      "SECRET_KEY": "tests-only-secret",
                      "DEMO_TOKENS_FILE": str(tmp_path / "demo-tokens.json")})
    yield app
    with app.app_context():
        db.engine.dispose()  # the pool's connections close here, not when collected


def invoke(app, *args):
    assert not has_app_context()
    result = app.test_cli_runner().invoke(args=list(args))
    assert not has_app_context()
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def test_every_command_runs_with_no_context_pushed_by_hand(plain_app):
    upgrade = invoke(plain_app, "db-upgrade")
    assert upgrade.exit_code == 0 and upgrade.output.startswith("applied 0001_")
    assert invoke(plain_app, "db-upgrade").output == "database is up to date\n"
    status = invoke(plain_app, "db-status").output.splitlines()
    assert status and all(line.startswith("applied  ") for line in status)

    demo = invoke(plain_app, "demo", "--user", "erin")
    assert demo.exit_code == 0, demo.output
    session_id = demo.output.split()[6].rstrip(":")
    assert "token:  tlu_" in demo.output

    runner_token = invoke(plain_app, "create-runner-token", "--machine", "m1", "--any-user")
    assert runner_token.stdout.startswith("tlr_")
    assert invoke(plain_app, "create-user-token", "--user", "ops", "--admin").stdout.startswith("tlu_")
    listing = invoke(plain_app, "list-tokens").stdout.splitlines()[1:]  # after the header
    assert [line.split("\t")[1:3] for line in listing] == [
        ["user", "erin"], ["runner", "m1"], ["user", "ops"]]
    assert invoke(plain_app, "revoke-token", "2").output == "revoked token 2\n"

    assigned = invoke(plain_app, "assign-machine", session_id, "--machine", "m1")
    assert assigned.output == (f"session {session_id} (completed) assigned to machine 'm1';"
                               " it had machine 'demo'\n")
    pruned = invoke(plain_app, "prune-outputs")
    assert pruned.stdout == "deleted 0 expired output rows\n"
    assert "INFO [-] app.cli.database: pruned 0 expired output rows" in pruned.stderr


def test_a_refused_operation_is_one_error_line(plain_app):
    invoke(plain_app, "db-upgrade")
    result = invoke(plain_app, "assign-machine", "no-such-session", "--machine", "m1")
    assert (result.exit_code, result.output) == (1, "Error: no session no-such-session\n")
    result = invoke(plain_app, "revoke-token", "seven")
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "'seven' is not a valid integer" in result.output


@pytest.mark.sqlite_only
def test_a_database_that_cannot_be_opened_is_one_error_line(tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "x",
                      "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/missing/dir/t.sqlite"})
    result = invoke(app, "db-status")
    with app.app_context():
        db.engine.dispose()
    assert result.exit_code == 1
    assert result.output == "Error: database error: unable to open database file\n"
