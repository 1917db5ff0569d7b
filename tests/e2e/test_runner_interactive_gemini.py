"""`turnlog run --interactive` driving the REAL Gemini CLI over ACP (`gemini --acp`; found by
tests/agents/clis.py, skipped with the reason when absent or when node is older than it
needs) against the scripted fake Gemini API (tests/agents/gemini.py) and the fake turnlog
server of tests/fake_control_server.py: the --prompt, a shell command allowed (it ran), a
file write denied (no file), an interrupt of a slow turn and a prompt after it, a stop.
The lines the runner posted are then ingested by the real server (test client, auth on)
and fold to the rows the agent's turns were: the prompts applied where the agent took them,
the permission requests announced, the interrupted turn marked."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.client import usage
from app.core.inputs import input_uuid
from app.db import writing
from app.services import tokens
from tests.agents import acp_capture
from tests.agents import clis
from tests.agents import gemini
from tests.agents import scenarios
from tests.api import bearer
from tests.e2e.test_stream_replay import parse_sse
from tests.fake_control_server import control_server
from tests.figures import record
from tests.servers import reap

TURNLOG = Path(sys.executable).parent / "turnlog"
SESSIONS = "/api/remote/sessions"
DEADLINE = 90
PROMPTS = {name: acp_capture.prompt_of(name) for name in ("plain", "permission", "file_write", "slow")}

pytestmark = pytest.mark.skipif(clis.missing("gemini") is not None,
                                reason=clis.missing("gemini") or "")


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "STREAM_POLL_SECONDS": 0.01}


@pytest.fixture
def world(tmp_path):
    with gemini.server(acp_capture.SESSION) as model, control_server() as turnlog:
        agent = clis.Agent.setup("gemini", tmp_path, model.base)
        yield model, turnlog, agent, tmp_path


def start(world, *extra, session=None):
    """The runner, with the CLI started as a program named `gemini` (the auto driver's rule)
    and no --provider (the driver's provider is taken)."""
    _, turnlog, agent, tmp_path = world
    program = tmp_path / "bin" / "gemini"
    program.parent.mkdir(exist_ok=True)
    if not program.exists():
        program.symlink_to(agent.command[-1])
    (tmp_path / "token").write_text("tlr_fake\n")
    env = {**agent.env, "PATH": f"{Path(agent.command[0]).parent}{os.pathsep}{agent.env['PATH']}"}
    args = [TURNLOG, "run", "--server", turnlog.base, "--token-file", str(tmp_path / "token"),
            "--spool", str(tmp_path / "spool"), "--interactive", "--stop-grace", "5", *extra]
    if session:
        args += ["--session", session]
    return subprocess.Popen([*args, "--", str(program), "--model", clis.GEMINI_MODEL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=agent.cwd)


def seen(state, predicate, what, after=0):
    """Wait for a posted stdout line past the first `after` ones; it, and how many came."""
    found = []

    def look():
        lines = state.stdout_json()
        found[:] = [(n, line) for n, line in enumerate(lines) if n >= after and predicate(line)]
        return bool(found)
    state.wait(look, timeout=DEADLINE, what=what)
    return found[0]


def of_type(kind, **fields):
    return lambda line: line.get("type") == kind and all(line.get(k) == v for k, v in fields.items())


@pytest.fixture
def server(app, client):
    """The real server's side: alice's Gemini session, opened by runner m1, and tokens."""
    with app.app_context():
        alice = tokens.issue("user", "alice", writing())[1]
        runner = tokens.issue("runner", "m1", writing())[1]
    opened = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice",
                                         "machine": "m1", "provider": "gemini"},
                         headers=bearer(runner))
    assert opened.status_code == 201
    return {"sid": opened.get_json()["session"]["session_id"], "alice": alice, "runner": runner}


def queue_input(client, server, content, number):
    sent = client.post(f"{SESSIONS}/{server['sid']}/messages",
                       json={"content": content, "client_message_id": f"c-{number}"},
                       headers=bearer(server["alice"]))
    assert sent.status_code == 202
    input_id = sent.get_json()["input"]["input_id"]
    return {"input_id": input_id, "uuid": input_uuid(server["sid"], input_id), "content": content}


def test_the_real_gemini_cli_takes_prompts_permissions_an_interrupt_and_a_stop(world, client, server):
    model, turnlog, agent, _ = world
    state = turnlog.state
    inputs = [queue_input(client, server, PROMPTS[name], n)
              for n, name in enumerate(("permission", "file_write", "slow", "plain"))]
    proc = start(world, "--prompt", PROMPTS["plain"])
    try:
        at, _ = seen(state, of_type("result", status="success"), "the first turn's result")
        assert state.attached == [["send", "permissions", "interrupt", "stop"]]

        pushed = time.monotonic()
        state.push("input", **inputs[0])
        at, ask = seen(state, of_type("turnlog.permission_request"), "the shell's permission", at)
        asked = time.monotonic() - pushed
        assert (ask["tool_name"], ask["input"]) == ("run_shell_command",
                                                    {"command": "touch approved.txt && echo created"})
        state.push("permission", request_id=ask["request_id"], behavior="allow", message=None,
                   state="allowed")
        at, _ = seen(state, of_type("result"), "the end of the allowed turn", at)
        assert (agent.cwd / "approved.txt").exists()

        state.push("input", **inputs[1])
        at, ask = seen(state, of_type("turnlog.permission_request"), "the write's permission", at)
        assert ask["tool_name"] == "write_file"
        assert ask["input"]["file_path"] == str(agent.cwd / "notes.txt")
        state.push("permission", request_id=ask["request_id"], behavior="deny",
                   message="not in this folder", state="denied")
        at, _ = seen(state, of_type("result"), "the end of the denied turn", at)
        assert not (agent.cwd / "notes.txt").exists()
        with model.lock:
            after_denial = json.dumps(model.model_calls()[-1]["body"]["contents"][-1])
        assert "canceled by the user" in after_denial  # the model was told it did not run

        state.push("input", **inputs[2])
        at, _ = seen(state, of_type("message", role="assistant"), "the slow answer's first piece", at)
        interrupt = state.push("interrupt")
        at, _ = seen(state, of_type("turnlog.interrupted"), "the interrupted turn", at)
        state.push("input", **inputs[3])
        at, _ = seen(state, of_type("result", status="success"), "a turn after the interrupt", at)
        stop = state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.completed == {"exit_code": 0}
    assert "added to its command: --acp" in err
    assert state.acks[interrupt] == {"outcome": "done"} and state.acks[stop] == {"outcome": "done"}
    posted = state.stdout_json()
    assert not [line for line in posted if "jsonrpc" in line]  # the protocol's lines stay local
    story = scenarios.load("slow")["turns"][0]["replies"][0]["text"]
    said = "".join(line.get("content", "") for line in posted if line["type"] == "message")
    assert scenarios.chunks(story, 20)[0] in said and story not in said  # begun, never finished
    record("interactive, real Gemini CLI", command_to_permission_request_ms=round(asked * 1000))
    fold_through_the_server(client, server, state.stdout(), inputs)


def parsed(text):
    try:
        line = json.loads(text)
    except ValueError:
        return {}
    return line if isinstance(line, dict) else {}


def fold_through_the_server(client, server, lines, inputs):
    """The runner's lines, ingested by the real server, are the agent's turns as rows, and
    the usage the runner reads from them is the CLI's own."""
    chunks = [{"seq": n, "data": line} for n, line in enumerate(lines)]
    reports = [report for n, line in enumerate(lines) if (report := usage.report_for("gemini", n, line))]
    posted = client.post(f"{SESSIONS}/{server['sid']}/output", json={"chunks": chunks, "usage": reports},
                         headers=bearer(server["runner"]))
    assert posted.status_code == 200, posted.get_json()
    session = client.get(f"{SESSIONS}/{server['sid']}", headers=bearer(server["alice"])).get_json()["session"]
    assert session["pending_inputs"] == []  # each applied by its turnlog.user line
    ends = [line["stats"] for line in map(parsed, lines) if line.get("type") == "result"]
    assert len(ends) == 4 and all(end["input_tokens"] > 0 for end in ends)  # none for the interrupted
    assert (session["total_input_tokens"], session["total_output_tokens"]) == (
        sum(end["input_tokens"] for end in ends), sum(end["output_tokens"] for end in ends))
    messages = client.get(f"{SESSIONS}/{server['sid']}/messages",
                          headers=bearer(server["alice"])).get_json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"] for m in users] == [PROMPTS["plain"], *(i["content"] for i in inputs)]
    assert {m["source"] for m in users} == {"remote_live"}
    assert session["message_count"] == len(messages)
    replies = [messages[messages.index(user) + 1] for user in users]
    assert [m["role"] for m in replies] == ["assistant"] * 5
    assert replies[0]["content"] == "Hello, turnlog! This is a plain answer."
    assert "approved.txt was handled" in replies[1]["content"]
    done = client.post(f"{SESSIONS}/{server['sid']}/complete", json={"exit_code": 0},
                       headers=bearer(server["runner"]))
    assert done.status_code == 200
    events = parse_sse(client.get(f"{SESSIONS}/{server['sid']}/events",
                                  headers=bearer(server["alice"])).get_data(as_text=True))
    requested = [data for name, _, data in events if name == "permission.requested"]
    assert [data["tool_name"] for data in requested] == ["run_shell_command", "write_file"]
    completed = [data for name, _, data in events if name == "turn.completed"]
    assert [bool(data.get("interrupted")) for data in completed] == [False, False, False, True, False]


@pytest.mark.parametrize("how", ["stop command", "ctrl-c"])
def test_a_stop_during_a_running_turn_ends_the_real_gemini_cli_and_completes_the_session(world, how):
    _, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world, "--prompt", PROMPTS["slow"])
    try:
        seen(state, of_type("message", role="assistant"), "the slow answer's first piece")
        started = time.monotonic()
        if how == "ctrl-c":
            proc.send_signal(signal.SIGINT)
        else:
            stop = state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
        took = time.monotonic() - started
    finally:
        reap(proc)
    if how == "ctrl-c":
        assert "stopping the agent (asked by this terminal)" in err
    else:
        assert state.acks[stop] == {"outcome": "done"}
    assert state.completed == {"exit_code": proc.returncode}, err
    assert proc.returncode == 0, err  # the end of its stdin ends it, mid-turn too
    assert took < 3  # cancelled, not finished: well before the grace period ran out
    record("interactive, real Gemini CLI", **{f"{how.replace(' ', '_').replace('-', '_')}"
                                              "_mid_turn_to_exit_ms": round(took * 1000)})


def test_a_killed_runner_resumed_loads_the_same_gemini_session_with_its_history(world):
    model, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world, "--prompt", PROMPTS["plain"])
    try:
        seen(state, of_type("result", status="success"), "the first result")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    first = next(line for line in state.stdout_json() if line["type"] == "init")["session_id"]
    before = len(state.stdout_json())

    resumed = start(world, "--prompt", PROMPTS["plain"], session=state.session_id)
    try:
        # the load waits for the next minute (the CLI's bug, FORMATS B4): up to ~61 s
        at, init = seen(state, of_type("init"), "the resumed session's init", before)
        assert init["session_id"] == first
        state.push("input", input_id=1, uuid="6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d",
                   content=PROMPTS["permission"])
        seen(state, of_type("turnlog.permission_request"), "the resumed turn's request", at)
        state.push("stop", requested_by="alice")
        _, err = resumed.communicate(timeout=DEADLINE)
    finally:
        reap(resumed)
    assert resumed.returncode == 0, err
    later = state.stdout_json()[before:]
    # the history the load replays is not posted again, and the --prompt is not sent again
    assert [line["type"] for line in later[:3]] == ["init", "turnlog.user", "tool_use"]
    with model.lock:
        contents = json.dumps(model.model_calls()[-1]["body"]["contents"])
    assert PROMPTS["plain"] in contents and "This is a plain answer." in contents
