"""`turnlog run --interactive` driving the REAL Claude Code CLI (found under
TURNLOG_AGENTS_DIR, else .agents/ at the repository root; skipped when absent) against a
minimal fake Anthropic API (tests/fake_anthropic_min.py) and the fake turnlog server of
tests/fake_control_server.py: the --prompt, inputs, a permission allowed and one denied by
commands, an interrupt of a running turn and a stop; and a runner killed -9 before its ack, resumed, which delivers the
input once and continues the same Claude session (`--resume`)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.client.spool import load
from app.client.spool import spool_path
from tests.fake_anthropic_min import fake_anthropic
from tests.fake_control_server import control_server
from tests.figures import record
from tests.servers import reap

TURNLOG = Path(sys.executable).parent / "turnlog"
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 90


def claude_binary():
    agents = Path(os.environ.get("TURNLOG_AGENTS_DIR") or ROOT / ".agents")
    for relative in ("node_modules/@anthropic-ai/claude-code-linux-x64/claude",
                     "node_modules/.bin/claude"):
        if (agents / relative).exists():
            return agents / relative
    return None


CLAUDE = claude_binary()
pytestmark = pytest.mark.skipif(
    CLAUDE is None, reason="the real Claude Code CLI is not installed: set TURNLOG_AGENTS_DIR to"
                           " a folder holding node_modules/@anthropic-ai/claude-code (.ci/run"
                           " installs it in .agents/)")


@pytest.fixture
def world(tmp_path):
    with fake_anthropic() as model, control_server() as turnlog:
        yield model, turnlog, tmp_path


def start(world, *extra, session=None):
    model, turnlog, tmp_path = world
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "token").write_text("tlr_fake\n")
    env = dict(os.environ, HOME=str(home), TMPDIR=str(home), ANTHROPIC_BASE_URL=model.base,
               ANTHROPIC_API_KEY="sk-fake", DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_ERROR_REPORTING="1")
    args = [TURNLOG, "run", "--server", turnlog.base, "--token-file", str(tmp_path / "token"),
            "--spool", str(tmp_path / "spool"), "--interactive", "--stop-grace", "5", *extra]
    if session:
        args += ["--session", session]
    return subprocess.Popen([*args, "--", str(CLAUDE)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=home)


def seen(state, predicate, what):
    state.wait(lambda: any(predicate(line) for line in state.stdout_json()), timeout=DEADLINE,
               what=what)


def replayed(content):
    return lambda line: (line.get("type") == "user" and line.get("isReplay")
                         and line["message"]["content"] == content)


def asked(model, text):
    """How many model requests (with tools: the agent's turns) had `text` in their last user
    message (the CLI adds role "system" messages after it)."""
    with model.lock:
        requests = list(model.requests)
    users = [[m for m in body.get("messages") or [] if m.get("role") == "user"]
             for body in requests if body.get("tools")]
    return sum(1 for messages in users if messages and text in json.dumps(messages[-1]))


def test_the_real_claude_cli_takes_prompts_a_permission_an_interrupt_and_a_stop(world):
    model, turnlog, tmp_path = world
    state = turnlog.state
    proc = start(world, "--prompt", "hello there")
    try:
        seen(state, replayed("hello there"), "the echo of --prompt")
        seen(state, lambda line: line.get("type") == "result", "the first result")
        assert state.attached == [["send", "permissions", "interrupt", "stop"]]

        pushed = time.monotonic()
        command_id = state.push("input", input_id=1, uuid="7b0c8a52-2f0a-4c1e-9d55-0e6f3d1a7c11",
                                content="please RUN touch made-by-claude.txt")
        state.wait(lambda: command_id in state.acks, timeout=DEADLINE, what="the input's ack")
        acked = time.monotonic() - pushed
        seen(state, lambda line: line.get("type") == "control_request"
             and line["request"].get("subtype") == "can_use_tool", "the permission request")
        ask = next(line for line in state.stdout_json() if line.get("type") == "control_request")
        assert ask["request"]["input"]["command"] == "touch made-by-claude.txt"
        state.push("permission", request_id=ask["request_id"], behavior="allow", message=None,
                   state="allowed")
        seen(state, lambda line: line.get("type") == "result"
             and "tool said" in str(line.get("result")), "the turn after the tool ran")
        assert (tmp_path / "home" / "made-by-claude.txt").exists()

        state.push("input", input_id=2, uuid="8c1d9b63-3a1b-4d2f-8e66-1f7a4e2b8d22",
                   content="please RUN touch refused.txt")
        seen(state, lambda line: line.get("type") == "control_request"
             and line["request"]["input"].get("command") == "touch refused.txt", "the second ask")
        ask = [line for line in state.stdout_json() if line.get("type") == "control_request"][-1]
        state.push("permission", request_id=ask["request_id"], behavior="deny",
                   message="not in this folder", state="denied")
        seen(state, lambda line: line.get("type") == "result"
             and "not in this folder" in str(line.get("result")), "the turn after the denial")
        assert not (tmp_path / "home" / "refused.txt").exists()

        state.push("input", input_id=3, uuid="9d2e0c74-4b2c-4e3a-9f77-2a8b5f3c9e33",
                   content="a SLOW answer please")
        # the echo comes with the turn's first answer; the lifecycle line says it started
        seen(state, lambda line: line.get("type") == "command_lifecycle"
             and line.get("command_uuid") == "9d2e0c74-4b2c-4e3a-9f77-2a8b5f3c9e33"
             and line.get("state") == "started", "the slow turn's start")
        interrupt = state.push("interrupt")
        seen(state, lambda line: line.get("type") == "control_response"
             and str(line["response"].get("request_id", "")).startswith("turnlog-interrupt-"),
             "the interrupt's control_response")
        seen(state, lambda line: line.get("type") == "result"
             and line.get("terminal_reason") == "aborted_streaming", "the interrupted result")
        state.push("input", input_id=4, uuid="ae3f1d85-5c3d-4f4b-a088-3b9c6a4d0f44",
                   content="after the interrupt")
        seen(state, lambda line: line.get("type") == "result"
             and "after the interrupt" in str(line.get("result")), "a turn after the interrupt")
        stop = state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.completed == {"exit_code": 0}
    assert not any("SLOW" in str(line.get("result")) for line in state.stdout_json()
                   if line.get("type") == "result")  # the slow answer never finished
    assert state.acks[interrupt] == {"outcome": "done"} and state.acks[stop] == {"outcome": "done"}
    echoes = [line for line in state.stdout_json() if line.get("isReplay")]
    assert {line["uuid"] for line in echoes} >= {"7b0c8a52-2f0a-4c1e-9d55-0e6f3d1a7c11"}
    record("interactive, real Claude CLI", command_to_ack_ms=round(acked * 1000, 1))


def test_a_killed_runner_resumed_delivers_once_and_continues_the_claude_session(world):
    model, turnlog, tmp_path = world
    state = turnlog.state
    proc = start(world, "--prompt", "remember the word teapot")
    try:
        seen(state, lambda line: line.get("type") == "result", "the first result")
        first_session = next(line["session_id"] for line in state.stdout_json()
                             if line.get("type") == "result")
        held = state.push_input_holding_its_ack(1, "0d4f3c2b-1a09-4e8d-b7c6-a5f4e3d2c1b0", "say once",
                                                timeout=DEADLINE)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    spooled, _ = load(spool_path(tmp_path / "spool", state.session_id))
    assert held in spooled.commands_done
    assert spooled.agent_session_id == first_session
    time.sleep(1)  # the orphaned CLI sees EOF and ends its turn (its lines are lost with the runner)

    state.hold_acks.clear()
    resumed = start(world, "--prompt", "remember the word teapot", session=state.session_id)
    try:
        state.wait(lambda: held in state.acks, timeout=DEADLINE, what="the resumed ack")
        after = state.push("input", input_id=2, uuid="5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
                           content="and now after")
        state.wait(lambda: after in state.acks, timeout=DEADLINE, what="the second ack")
        seen(state, lambda line: line.get("type") == "result"
             and "and now after" in str(line.get("result")), "the turn after the resume")
        state.push("stop", requested_by="alice")
        _, err = resumed.communicate(timeout=DEADLINE)
    finally:
        reap(resumed)
    assert resumed.returncode == 0, err
    assert f"--resume {first_session}" in err
    assert asked(model, "remember the word teapot") == 1  # the --prompt: once
    assert asked(model, "say once") <= 1  # the held input: never again after the resume
    later = [line for line in state.stdout_json() if line.get("type") == "result"
             and "and now after" in str(line.get("result"))]
    assert later and all(line["session_id"] == first_session for line in later)
    with model.lock:  # the resumed CLI sent the earlier conversation with the new prompt
        last = [body for body in model.requests if body.get("tools")][-1]
    assert "teapot" in json.dumps(last["messages"])


def test_ctrl_c_stops_the_real_claude_cli_and_completes_the_session(world):
    _, turnlog, _ = world
    state = turnlog.state
    proc = start(world, "--prompt", "hello")
    try:
        seen(state, lambda line: line.get("type") == "result", "the first result")
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=DEADLINE)
        took = time.monotonic() - started
    finally:
        reap(proc)
    assert proc.returncode == 0, err  # stdin closed after a result: Claude exits 0
    assert state.completed == {"exit_code": 0}
    assert "stopping the agent (asked by this terminal)" in err
    assert took < 5  # loose: EOF ended it, no SIGTERM after the grace period
    record("interactive, real Claude CLI", ctrl_c_to_exit_ms=round(took * 1000))
