"""The installed `turnlog` command: the operator commands as `flask --app wsgi` has them,
and the client commands' refusals of a bad command line."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests import servers

TURNLOG = Path(sys.executable).parent / "turnlog"


def turnlog(*args, env=None):
    return subprocess.run([TURNLOG, *args], cwd=servers.ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


def test_turnlog_version_is_turnlogs_own():
    from importlib.metadata import version
    done = turnlog("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"turnlog {version('turnlog')}"


def test_turnlog_carries_the_operator_commands_of_flask(tmp_path):
    db_file = tmp_path / "console.sqlite"
    env = {**os.environ, "TURNLOG_SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_file}"}
    upgraded = turnlog("db-upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    made = turnlog("create-runner-token", "--machine", "m1", "--any-user", env=env)
    assert made.returncode == 0 and made.stdout.startswith("tlr_")
    with sqlite3.connect(db_file) as conn:
        assert conn.execute("SELECT name FROM agent_tokens").fetchall() == [("m1",)]
    listing = turnlog("--help", env=env).stdout
    assert all(name in listing for name in ("db-upgrade", "create-user-token", "run", "follow"))


def test_run_needs_a_server_a_token_and_a_command(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("TURNLOG_SERVER", "TURNLOG_TOKEN")}
    missing = turnlog("run", "--", "true", env=env)
    assert missing.returncode == 2 and "--server URL (or TURNLOG_SERVER)" in missing.stderr
    follow_missing = turnlog("follow", "5e0c2d1e-0000-4000-8000-000000000000", env=env)
    assert follow_missing.returncode == 2 and "TURNLOG_SERVER" in follow_missing.stderr
    no_command = turnlog("run", "--server", "http://127.0.0.1:9", "--token", "t", env=env)
    assert no_command.returncode == 2 and "COMMAND" in no_command.stderr
    no_token = turnlog("run", "--server", "http://127.0.0.1:9", "--", "true", env=env)
    assert no_token.returncode == 2 and "a token is needed" in no_token.stderr
    assert "TURNLOG_TOKEN" in no_token.stderr
    two_words = turnlog("run", "--server", "http://127.0.0.1:9", "--token", "a b", "--", "true",
                        env=env)
    assert two_words.returncode == 2 and "not a token" in two_words.stderr
    mixed = turnlog("run", "--server", "http://x", "--token", "t", "--session-type", "chat",
                    "--workflow-id", "w", "--", "true", env=env)
    assert mixed.returncode == 2 and "--workflow-id" in mixed.stderr
