"""`turnlog run --interactive` as a real process against a fake turnlog server speaking the
control routes (tests/fake_control_server.py) and a fake agent speaking Claude's stream-json
stdin/stdout protocol (tests/fake_claude_stdio.py): the first prompt, inputs, a
permission, an interrupt and a stop reach the agent in order and are acknowledged; a
runner killed -9 between acting and acknowledging, then resumed, delivers nothing twice
and continues the agent's own session; Ctrl-C stops the agent; the generic driver."""
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
from tests.fake_control_server import control_server
from tests.figures import record
from tests.servers import reap

TURNLOG = Path(sys.executable).parent / "turnlog"
AGENT = [sys.executable, str(Path(__file__).resolve().parents[1] / "fake_claude_stdio.py")]
DEADLINE = 60


@pytest.fixture
def fake():
    with control_server() as server:
        yield server


def start(fake, tmp_path, *extra, agent=AGENT, session=None):
    args = [TURNLOG, "run", "--server", fake.base, "--token-file", str(token_file(tmp_path)),
            "--spool", str(tmp_path / "spool"), "--interactive", "--stop-grace", "2", *extra]
    if session:
        args += ["--session", session]
    env = dict(os.environ, FAKE_AGENT_LOG=str(tmp_path / "agent.log"))
    return subprocess.Popen([*args, "--", *agent], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("tlr_fake\n")
    return path


def agent_log(tmp_path):
    """(argv of each agent started, every stdin line read: (time, line))."""
    path = tmp_path / "agent.log"
    records = [json.loads(text) for text in path.read_text().splitlines()] if path.exists() else []
    return ([r["argv"] for r in records if "argv" in r],
            [(r["at"], r["line"]) for r in records if "line" in r])


def lines_of(tmp_path, kind):
    return [line for _, line in agent_log(tmp_path)[1] if line.get("type") == kind]


def wait_stdout(fake, predicate, what):
    fake.state.wait(lambda: any(predicate(line) for line in fake.state.stdout_json()), what=what)


def echoed(content):
    return lambda line: line.get("isReplay") and line["message"]["content"] == content


def finish(proc):
    _, err = proc.communicate(timeout=DEADLINE)
    return proc.returncode, err


def test_prompt_inputs_permission_interrupt_and_stop_reach_the_agent_in_order(fake, tmp_path):
    state = fake.state
    proc = start(fake, tmp_path, "--driver", "claude", "--prompt", "hello")
    try:
        wait_stdout(fake, echoed("hello"), "the --prompt's echo")
        state.wait(lambda: state.attached, what="the attach")
        assert state.attached == [["send", "permissions", "interrupt", "stop"]]

        latencies = []
        for n in range(5):
            content = f"input {n}"
            command_id = state.push("input", input_id=n + 1, uuid=f"uuid-{n}", content=content)
            wait_stdout(fake, echoed(content), f"the echo of {content}")
            state.wait(lambda cid=command_id: cid in state.acks, what="the ack")
            assert state.acks[command_id] == {"outcome": "done"}
            read_at = [at for at, line in agent_log(tmp_path)[1]
                       if line.get("uuid") == f"uuid-{n}"]
            latencies.append(read_at[0] - state.pushed_at[command_id])

        state.push("input", input_id=9, uuid="uuid-tool", content="tool: ls -la")
        wait_stdout(fake, lambda line: line.get("type") == "control_request", "the permission ask")
        request_id = next(line["request_id"] for line in state.stdout_json()
                          if line.get("type") == "control_request")
        allow = state.push("permission", request_id=request_id, behavior="allow", message=None,
                           state="allowed")
        wait_stdout(fake, lambda line: line.get("result") == "ran ls -la", "the tool's run")
        again = state.push("permission", request_id=request_id, behavior="deny",
                           message="late", state="denied")
        state.wait(lambda: again in state.acks, what="the ack of a second answer")
        assert state.acks[allow] == {"outcome": "done"}
        assert state.acks[again]["outcome"] == "failed"
        assert request_id in state.acks[again]["reason"]

        interrupt = state.push("interrupt")
        wait_stdout(fake, lambda line: line.get("type") == "control_response"
                    and line["response"]["request_id"].startswith("turnlog-interrupt-"),
                    "the interrupt's answer")
        stop = state.push("stop", requested_by="alice")
        code, err = finish(proc)
    finally:
        reap(proc)
    assert code == 0, err
    assert state.completed == {"exit_code": 0}
    assert state.acks[interrupt] == {"outcome": "done"} and state.acks[stop] == {"outcome": "done"}
    argv = agent_log(tmp_path)[0][0]
    for flag in ("-p", "--verbose", "--replay-user-messages"):
        assert flag in argv
    for flag, value in (("--input-format", "stream-json"), ("--output-format", "stream-json"),
                        ("--permission-prompt-tool", "stdio")):
        assert argv[argv.index(flag) + 1] == value
    assert "added to its command: -p --input-format stream-json" in err
    users = [line["message"]["content"] for line in lines_of(tmp_path, "user")]
    assert users == ["hello", *(f"input {n}" for n in range(5)), "tool: ls -la"]
    answer = next(line for line in lines_of(tmp_path, "control_response"))
    assert answer["response"]["response"] == {"behavior": "allow",
                                              "updatedInput": {"command": "ls -la"}}
    assert [line["request"]["subtype"] for line in lines_of(tmp_path, "control_request")] == [
        "interrupt"]
    assert not spool_path(tmp_path / "spool", fake.state.session_id).exists()
    latencies.sort()
    record("interactive: command on the channel -> the agent's stdin",
           p50_ms=round(latencies[len(latencies) // 2] * 1000, 1),
           max_ms=round(latencies[-1] * 1000, 1))
    assert latencies[-1] < 5  # loose: the measure is reported, not asserted


def test_a_runner_killed_before_its_ack_and_resumed_delivers_nothing_twice(fake, tmp_path):
    state = fake.state
    proc = start(fake, tmp_path, "--driver", "claude", "--prompt", "first")
    try:
        wait_stdout(fake, echoed("first"), "the --prompt's echo")
        held = state.push_input_holding_its_ack(1, "uuid-once", "only once")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert held not in state.acks  # the server never stored the ack
    spooled, _ = load(spool_path(tmp_path / "spool", state.session_id))
    assert held in spooled.commands_done and spooled.prompt_sent
    agent_session = spooled.agent_session_id
    assert agent_session

    state.hold_acks.clear()
    resumed = start(fake, tmp_path, "--driver", "claude", "--prompt", "first",
                    session=state.session_id)
    try:
        state.wait(lambda: held in state.acks, what="the resumed runner's ack")
        after = state.push("input", input_id=2, uuid="uuid-after", content="after")
        wait_stdout(fake, echoed("after"), "the echo of the input after the resume")
        state.wait(lambda: after in state.acks, what="its ack")
        state.push("stop", requested_by="alice")
        code, err = finish(resumed)
    finally:
        reap(resumed)
    assert code == 0, err
    assert state.acks[held] == {"outcome": "done"}
    assert "acted on before this run" in err and "not again" in err
    users = [line["message"]["content"] for line in lines_of(tmp_path, "user")]
    assert users == ["first", "only once", "after"]  # none twice
    argvs = agent_log(tmp_path)[0]
    assert "--resume" not in argvs[0]
    assert argvs[1][argvs[1].index("--resume") + 1] == agent_session


def test_ctrl_c_stops_the_agent_and_completes_the_session(fake, tmp_path):
    state = fake.state
    proc = start(fake, tmp_path, "--driver", "claude", "--prompt", "hi")
    try:
        wait_stdout(fake, echoed("hi"), "the --prompt's echo")
        proc.send_signal(signal.SIGINT)
        code, err = finish(proc)
    finally:
        reap(proc)
    assert code == 0, err  # the agent exits 0 at EOF
    assert state.completed == {"exit_code": 0}
    assert "stopping the agent (asked by this terminal)" in err
    ended = (f"turnlog: interrupted (SIGINT): session {state.session_id} completed (exit 0);"
             f" {fake.base}/sessions/{state.session_id}\n")
    assert ended in err and err.index("stopping the agent") < err.index(ended), err


GENERIC = [sys.executable, "-u", "-c", """
import signal, sys, time
def on_int(*_):
    print("interrupted", flush=True)
signal.signal(signal.SIGINT, on_int)
print("ready", flush=True)
for line in sys.stdin:
    print("read", line.strip(), flush=True)
print("eof", flush=True)
"""]


def test_the_generic_driver_interrupts_with_sigint_and_refuses_input(fake, tmp_path):
    state = fake.state
    proc = start(fake, tmp_path, agent=GENERIC)
    try:
        state.wait(lambda: "ready" in state.stdout(), what="the child's first line")
        assert state.attached == [["interrupt", "stop"]]
        refused = state.push("input", input_id=1, uuid="u", content="hello")
        interrupt = state.push("interrupt")
        state.wait(lambda: "interrupted" in state.stdout(), what="SIGINT in the child")
        state.push("stop", requested_by="bob")
        code, err = finish(proc)
    finally:
        reap(proc)
    assert code == 0, err
    assert state.acks[refused]["outcome"] == "failed"
    assert "does not offer send" in state.acks[refused]["reason"]
    assert state.acks[interrupt] == {"outcome": "done"}
    assert state.stdout() == ["ready", "interrupted", "eof"]
    assert state.completed == {"exit_code": 0}


def test_prompt_without_interactive_is_a_usage_error(tmp_path):
    proc = subprocess.run([TURNLOG, "run", "--server", "http://127.0.0.1:9", "--token-file",
                           str(token_file(tmp_path)), "--prompt", "x", "--", "true"],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert proc.returncode == 2
    assert "--prompt and --driver go with --interactive" in proc.stderr


def test_an_agent_that_exits_on_its_own_completes_the_session_at_once(fake, tmp_path):
    state = fake.state
    started = time.monotonic()
    proc = start(fake, tmp_path, agent=[sys.executable, "-c", "print('done'); raise SystemExit(4)"])
    try:
        code, err = finish(proc)
    finally:
        reap(proc)
    assert code == 4, err
    assert state.completed == {"exit_code": 4}
    assert state.stdout() == ["done"]
    assert time.monotonic() - started < 10  # loose: it does not wait out the command stream


def test_an_agent_that_dies_before_its_prompt_still_completes_the_session(fake, tmp_path):
    proc = start(fake, tmp_path, "--driver", "claude", "--prompt", "hello",
                 agent=[sys.executable, "-c", "import os; os.close(0); raise SystemExit(7)"])
    try:
        code, err = finish(proc)
    finally:
        reap(proc)
    assert code == 7, err
    assert fake.state.completed == {"exit_code": 7}
    assert "Traceback" not in err
