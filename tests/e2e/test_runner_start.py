"""`turnlog run` as a person meets it, against real gunicorn: a mistake before the agent
starts opens no session; the agent's output shows in the terminal (unless --quiet); a
failed agent's exit code, command line, prompt and last stderr lines reach the API,
the viewer's list and `turnlog follow`."""
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests import claude_lines as cl
from tests import servers

TURNLOG = Path(sys.executable).parent / "turnlog"
DEADLINE = 60
SECRET = "sk-ant-api03-" + "Z9y8" * 8
# A stand-in `claude` on the PATH: Claude stream-json on stdout, a failure on stderr.
LINES = [cl.assistant(cl.text("Looking at the pager.")), cl.result()]
FAILING_AGENT = f"""#!{sys.executable}
import sys
for line in {LINES!r}:
    print(line, flush=True)
print("Error: the model refused the key", file=sys.stderr, flush=True)
print("hint: check ANTHROPIC_API_KEY", file=sys.stderr, flush=True)
sys.exit(3)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with servers.gunicorn(tmp_path_factory.mktemp("start"), auth=True, workers=1) as served:
        yield served


@pytest.fixture(scope="module")
def tokens(server):
    return (server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
            server.new_token("create-user-token", "--user", "alice"))


@pytest.fixture(scope="module")
def agent_path(tmp_path_factory):
    """A folder holding the failing `claude`, for the PATH."""
    folder = tmp_path_factory.mktemp("bin")
    (folder / "claude").write_text(FAILING_AGENT)
    (folder / "claude").chmod(0o755)
    return folder


def turnlog_run(server, token, spool, *args, path=None, quiet=False):
    env = {**os.environ, "PATH": f"{path}{os.pathsep}{os.environ['PATH']}" if path else os.environ["PATH"]}
    env.pop("TURNLOG_TOKEN", None)
    extra = ["--quiet"] if quiet else []
    return subprocess.run([TURNLOG, "run", "--server", server.base, "--token", token, "--spool",
                           str(spool), *extra, "--", *args],
                          env=env, capture_output=True, text=True, timeout=DEADLINE)


def session_count(server):
    with sqlite3.connect(server.db_file) as conn:
        return conn.execute("SELECT COUNT(*) FROM agent_sessions").fetchone()[0]


def session_of(done):
    return done.stderr.split("turnlog: session ", 1)[1].split()[0]


def api_session(server, user, sid):
    answer = requests.get(f"{server.base}/api/remote/sessions/{sid}",
                          headers={"Authorization": f"Bearer {user}"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["session"]


def test_a_command_that_does_not_exist_exits_127_and_opens_no_session(server, tokens, tmp_path):
    runner, _ = tokens
    before = session_count(server)
    done = turnlog_run(server, runner, tmp_path / "spool", "no-such-agent-here", "-p", "hi")
    assert done.returncode == 127, done.stderr
    assert "cannot start 'no-such-agent-here': no such command on the PATH" in done.stderr
    assert "turnlog: session" not in done.stderr
    assert session_count(server) == before
    assert not (tmp_path / "spool").exists() or list((tmp_path / "spool").iterdir()) == []


def test_a_user_token_is_refused_naming_the_fix_and_opens_no_session(server, tokens, tmp_path):
    _, user = tokens
    before = session_count(server)
    done = turnlog_run(server, user, tmp_path / "spool", sys.executable, "-c", "print('hi')")
    assert done.returncode == 125, done.stderr
    assert "needs a runner token" in done.stderr and "create-runner-token" in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert session_count(server) == before


def test_a_failing_agent_shows_its_output_here_and_its_failure_in_the_api(
        server, tokens, agent_path, tmp_path):
    runner, user = tokens
    done = turnlog_run(server, runner, tmp_path / "spool", "claude", "-p", "fix the pager test",
                       "--output-format", "stream-json", "--api-key", SECRET, path=agent_path)
    assert done.returncode == 3, done.stderr
    # passed through as tee would: stdout to stdout, stderr to stderr, as printed
    assert done.stdout.splitlines() == LINES
    assert "Error: the model refused the key\nhint: check ANTHROPIC_API_KEY\n" in done.stderr
    sid = session_of(done)

    session = api_session(server, user, sid)
    assert (session["status"], session["exit_code"], session["stale"]) == ("failed", 3, False)
    assert session["stderr_tail"] == ["Error: the model refused the key", "hint: check ANTHROPIC_API_KEY"]
    assert session["failure_reason"] is None
    assert session["prompt"] == "fix the pager test"
    assert session["command"] == ["claude", "-p", "fix the pager test", "--output-format",
                                  "stream-json", "--api-key", "[redacted]"]
    assert SECRET not in json.dumps(session)
    assert list((tmp_path / "spool").iterdir()) == []  # completed: its spool is gone

    listed = requests.get(f"{server.base}/sessions", headers={"Authorization": f"Bearer {user}"},
                          timeout=10).text
    assert "fix the pager test" in listed  # the prompt is its title

    follow = subprocess.run([TURNLOG, "follow", "--server", server.base, "--token", user, sid],
                            capture_output=True, text=True, timeout=DEADLINE)
    assert follow.returncode == 0, follow.stderr
    assert follow.stdout.rstrip().endswith("[session failed, exit code 3]")
    tail = follow.stderr.splitlines()[-4:]
    assert tail == ["turnlog: session failed with exit code 3", "turnlog:   last lines on stderr:",
                    "turnlog:   | Error: the model refused the key",
                    "turnlog:   | hint: check ANTHROPIC_API_KEY"]


def test_quiet_keeps_the_terminal_to_the_runners_own_lines(server, tokens, agent_path, tmp_path):
    runner, user = tokens
    done = turnlog_run(server, runner, tmp_path / "spool", "claude", "-p", "quietly",
                       path=agent_path, quiet=True)
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert all(line.startswith("turnlog: ") for line in done.stderr.splitlines()), done.stderr
    session = api_session(server, user, session_of(done))
    assert len(session["stderr_tail"]) == 2  # still posted
