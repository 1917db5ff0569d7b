"""One agent run through `turnlog run` against a fake model server, for the real-CLI tests
(tests/e2e/test_real_agents.py) and what drives the CLIs interactively (issue 30)."""
import json
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.agents import anthropic
from tests.agents import clis
from tests.agents import gemini
from tests.agents import openai

TURNLOG = Path(sys.executable).parent / "turnlog"
FAKES = {"claude": anthropic.server, "codex": openai.server, "gemini": gemini.server}
RUN_SECONDS = 90


@dataclass
class Run:
    code: int
    stderr: str
    session_id: str
    lines: list  # the agent's stdout lines as the server stored them, parsed
    requests: list  # what the fake model server got
    seconds: float
    cwd: Path  # the folder the CLI ran in


def fake_server(name, scenario):
    """The fake model server CLI `name` talks to, playing `scenario`."""
    return FAKES[name](scenario)


def stdout_lines(db_file, session_id):
    with sqlite3.connect(db_file) as conn:
        rows = conn.execute("SELECT payload FROM remote_runtime_outputs WHERE session_id = ?"
                            " AND stream = 'stdout' ORDER BY producer_seq", (session_id,)).fetchall()
    lines = []
    for (payload,) in rows:
        try:
            lines.append(json.loads(payload))
        except ValueError:
            pass  # a line that is not JSON is still stored, but carries no totals
    return lines


def through_turnlog(server, token, name, scenario, tmp, prompt=None, extra=()):
    """Run CLI `name` headless on `scenario`'s first prompt through `turnlog run` against
    the gunicorn `server` (a tests.servers.Gunicorn on SQLite)."""
    from tests.agents import scenarios

    tmp = Path(tmp)
    with fake_server(name, scenario) as fake:
        agent = clis.Agent.setup(name, tmp / "agent", fake.base)
        argv = agent.headless(prompt or scenarios.prompts(scenario)[0], *extra)
        started = time.monotonic()
        done = subprocess.run([TURNLOG, "run", "--server", server.base, "--token", token,
                               "--provider", name, "--spool", str(tmp / "spool"), "--", *argv],
                              env=agent.env, cwd=agent.cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=RUN_SECONDS)
        seconds = time.monotonic() - started
        requests = list(fake.requests)
    assert done.stderr.startswith("turnlog: session "), done.stderr
    session_id = done.stderr.split()[2]
    return Run(done.returncode, done.stderr, session_id, stdout_lines(server.db_file, session_id),
               requests, seconds, agent.cwd)
