"""`turnlog run --interactive -- codex` driving the REAL Codex CLI (`codex app-server`,
found by tests/agents/clis.py; skipped with the reason when it is missing) against the
scripted fake Responses API (tests/agents/openai.py) and the fake turnlog server of
tests/fake_control_server.py: the --prompt answered, a shell command asked for, allowed
(the file exists) and denied (it does not; the model is told), an interrupt of a slow
turn and a prompt after it, a stop. Then the lines the runner posted go through the real
server's ingest (the Flask test client): every prompt one user row where Codex took it,
applying its input; the replies, the interrupted turn marked, both permission requests
recorded. Also: a stop while idle and Ctrl-C mid-turn, a prompt that steers a running
turn, an interrupt that withdraws a waiting permission, a failed turn, and a runner
killed -9 and resumed on the same thread."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.client.spool import load
from app.client.spool import spool_path
from app.core.inputs import input_uuid
from app.db import writing
from app.services import tokens
from tests.agents import clis
from tests.agents import openai
from tests.agents import scenarios
from tests.api import bearer
from tests.e2e.test_stream_replay import parse_sse
from tests.fake_control_server import control_server
from tests.figures import record
from tests.servers import reap

TURNLOG = Path(sys.executable).parent / "turnlog"
DEADLINE = 90
SESSIONS = "/api/remote/sessions"
PROMPTS = ["Create approved.txt with touch.", "Create refused.txt with touch.",
           "Tell a slow story.", "After the interrupt, say done."]
SCENARIO = {"turns": [
    {"prompt": "Say hello to turnlog.", "replies": [{"text": "Hello from the fake Codex model."}]},
    {"prompt": PROMPTS[0], "replies": [{"tool": "shell", "command": "touch approved.txt"},
                                       {"text": "approved.txt is there."}]},
    {"prompt": PROMPTS[1], "replies": [{"tool": "shell", "command": "touch refused.txt"},
                                       {"text": "The command was declined."}]},
    {"prompt": PROMPTS[2], "replies": [{"text": "Once upon a time " + "and then " * 30,
                                        "chunks": 30, "delay": 0.25}]},
    {"prompt": PROMPTS[3], "replies": [{"text": "Done after the interrupt."}]},
    {"prompt": "Remember the word teapot.", "replies": [{"text": "Noted: teapot."}]},
    {"prompt": "Say once.", "replies": [{"text": "Once."}]},
    {"prompt": "And now after.", "replies": [{"text": "After the resume."}]},
    {"prompt": "This request fails.", "replies": [{"error": {
        "status": 400, "type": "invalid_request_error", "message": "turnlog fake: refused"}}]},
    {"prompt": "Run a slow command.", "replies": [{"tool": "shell", "command": "sleep 2; echo slept"},
                                                  {"text": "Finished, and steered."}]}]}

pytestmark = [pytest.mark.real_agents,
              pytest.mark.skipif(bool(clis.missing("codex")), reason=str(clis.missing("codex")))]


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "STREAM_POLL_SECONDS": 0.01}


@pytest.fixture
def world(tmp_path):
    with openai.server(SCENARIO) as model, control_server() as turnlog:
        agent = clis.Agent.setup("codex", tmp_path / "agent", model.base)
        yield model, turnlog, agent, tmp_path


def start(world, *extra, session=None):
    _, turnlog, agent, tmp_path = world
    (tmp_path / "token").write_text("tlr_fake\n")
    program = agent.command[0]
    assert Path(program).name == "codex"  # so --driver auto picks the codex driver
    return subprocess.Popen(
        [TURNLOG, "run", "--server", turnlog.base, "--token-file", str(tmp_path / "token"),
         "--spool", str(tmp_path / "spool"), "--interactive",
         "--stop-grace", "5", *extra, *(["--session", session] if session else []),
         "--", program],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=agent.env, cwd=agent.cwd)


def seen(state, predicate, what):
    state.wait(lambda: any(predicate(line) for line in state.stdout_json()), timeout=DEADLINE,
               what=what)


def ended_after(state, kind):
    """Whether a turn ended (as exec says it, or interrupted) after the last line of `kind`."""
    lines = state.stdout_json()
    kinds = [line.get("type") for line in lines]
    if kind not in kinds:
        return False
    last = len(kinds) - 1 - kinds[::-1].index(kind)
    return any(k in ("turn.completed", "turn.failed", "turnlog.interrupted") for k in kinds[last:])


def asked(model, text):
    """How many model requests (with tools: the agent's own) had `text` as their last prompt."""
    with model.lock:
        bodies = [r["body"] for r in model.requests]
    return sum(1 for body in bodies if isinstance(body, dict) and body.get("tools")
               and openai.user_side(body.get("input") or [])[-1:] == [("prompt", text)])


def said(text):
    return lambda line: (line.get("type") == "item.completed"
                         and line["item"].get("type") == "agent_message"
                         and text in line["item"].get("text", ""))


def commands(state, status):
    return [line["item"]["command"] for line in state.stdout_json()
            if line.get("type") == "item.completed"
            and line["item"].get("type") == "command_execution"
            and line["item"].get("status") == status]


def ask_and_answer(state, uuid, content, behavior, message=None):
    """Send a prompt that runs a shell command; answer its permission request."""
    before = sum(1 for line in state.stdout_json() if line.get("type") == "turnlog.permission_request")
    state.push("input", input_id=0, uuid=uuid, content=content)
    state.wait(lambda: sum(1 for line in state.stdout_json()
                           if line.get("type") == "turnlog.permission_request") > before,
               timeout=DEADLINE, what=f"the permission request of {content!r}")
    ask = [line for line in state.stdout_json() if line.get("type") == "turnlog.permission_request"][-1]
    answer = state.push("permission", request_id=ask["request_id"], behavior=behavior,
                        message=message, state="allowed" if behavior == "allow" else "denied")
    state.wait(lambda: ended_after(state, "turnlog.permission_request") and answer in state.acks,
               timeout=DEADLINE,
               what="the turn's end and the answer's ack")
    assert state.acks[answer] == {"outcome": "done"}
    return ask


@pytest.fixture
def server(app, client):
    """The real server's side (the Flask test client), auth on: alice's codex session."""
    with app.app_context():
        alice = tokens.issue("user", "alice", writing())[1]
        runner = tokens.issue("runner", "m1", writing())[1]
    opened = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice",
                                         "machine": "m1", "provider": "codex"},
                         headers=bearer(runner))
    assert opened.status_code == 201
    sid = opened.get_json()["session"]["session_id"]
    uuids = []
    for number, content in enumerate(PROMPTS):
        sent = client.post(f"{SESSIONS}/{sid}/messages", headers=bearer(alice),
                           json={"content": content, "client_message_id": f"c-{number}"})
        assert sent.status_code == 202
        uuids.append(input_uuid(sid, sent.get_json()["input"]["input_id"]))
    return {"client": client, "sid": sid, "alice": alice, "runner": runner, "uuids": uuids}


def test_the_real_codex_cli_takes_prompts_permissions_an_interrupt_and_a_stop(world, server):
    model, turnlog, agent, _ = world
    state, uuids = turnlog.state, server["uuids"]
    proc = start(world, "--prompt", "Say hello to turnlog.")
    try:
        seen(state, said("Hello from the fake Codex model."), "the answer to --prompt")
        assert state.attached == [["send", "permissions", "interrupt", "stop"]]
        assert state.opened["provider"] == "codex"  # the driver's, with no --provider

        pushed = time.monotonic()
        ask = ask_and_answer(state, uuids[0], PROMPTS[0], "allow")
        took = time.monotonic() - pushed
        assert ask["tool_name"] == "command_execution"
        assert "touch approved.txt" in ask["input"]["command"]
        assert (agent.cwd / "approved.txt").exists()
        assert any("touch approved.txt" in c for c in commands(state, "completed"))

        ask_and_answer(state, uuids[1], PROMPTS[1], "deny", "not in this folder")
        assert not (agent.cwd / "refused.txt").exists()
        assert any("touch refused.txt" in c for c in commands(state, "declined"))
        with model.lock:
            told = [item for r in model.requests for item in r["body"].get("input") or []
                    if item.get("type") == "function_call_output"]
        assert "rejected by user" in told[-1]["output"]  # the model was told it was refused

        slow = state.push("input", input_id=0, uuid=uuids[2], content=PROMPTS[2])
        state.wait(lambda: slow in state.acks, timeout=DEADLINE, what="the slow prompt's ack")
        seen(state, lambda line: line.get("type") == "turnlog.user" and line["uuid"] == uuids[2],
             "the slow prompt taken")
        state.wait(lambda: asked(model, PROMPTS[2]), timeout=DEADLINE, what="the slow request")
        time.sleep(1.5)  # a few of its 30 pieces, 0.25 s apart, have streamed
        interrupt = state.push("interrupt")
        seen(state, lambda line: line.get("type") == "turnlog.interrupted", "the interrupted turn")
        state.push("input", input_id=0, uuid=uuids[3], content=PROMPTS[3])
        seen(state, said("Done after the interrupt."), "the turn after the interrupt")
        state.wait(lambda: ended_after(state, "turnlog.interrupted")
                   and state.stdout_json()[-1].get("type") == "turn.completed",
                   timeout=DEADLINE, what="its end")

        stop = state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert "added to its command: app-server" in err
    assert state.completed == {"exit_code": 0}
    state.wait(lambda: stop in state.acks, timeout=DEADLINE, what="the stop's ack")
    assert state.acks[interrupt] == {"outcome": "done"} and state.acks[stop] == {"outcome": "done"}
    assert not any(said("and then " * 30)(line) for line in state.stdout_json())  # never finished
    story = [line["item"]["text"] for line in state.stdout_json() if line.get("type") == "item.updated"
             and line["item"]["text"].startswith("Once upon")]
    assert len(story) >= 2 and story == sorted(story, key=len)  # it streamed, growing
    lines = state.stdout()
    assert not any(key in json.loads(text) for text in lines for key in ("jsonrpc", "method"))
    record("interactive, real Codex CLI", input_to_permission_answered_turn_s=round(took, 2))

    fold(server, lines, story)


def fold(server, lines, story):
    """The runner's lines through the real ingest: the rows and announcements they make."""
    client, sid = server["client"], server["sid"]
    chunks = [{"seq": n, "data": text} for n, text in enumerate(lines)]
    posted = client.post(f"{SESSIONS}/{sid}/output", json={"chunks": chunks},
                         headers=bearer(server["runner"]))
    assert posted.status_code == 200, posted.get_json()
    session = client.get(f"{SESSIONS}/{sid}", headers=bearer(server["alice"])).get_json()["session"]
    assert session["pending_inputs"] == []  # each input applied where Codex took it
    assert len(session["pending_permissions"]) == 2  # the answers went around the server here
    messages = client.get(f"{SESSIONS}/{sid}/messages",
                          headers=bearer(server["alice"])).get_json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"] for m in users] == ["Say hello to turnlog.", *PROMPTS]
    assert all(m["source"] == "remote_live" for m in users[1:]), users
    after = [messages[messages.index(m) + 1] for m in users]
    assert [m["role"] for m in after] == ["assistant"] * 5
    assert [m["content"] for m in after[:2]] == ["Hello from the fake Codex model.",
                                                  "approved.txt is there."]
    cut = after[3]  # what Codex had said of the slow story when it was interrupted
    assert cut["content"].startswith("Once upon a time") and cut["metadata"]["interrupted"] is True
    assert cut["content"] == max(story, key=len)  # its last state, one row
    assert after[4]["content"] == "Done after the interrupt."
    assert session["message_count"] == len(messages)
    done = client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 0},
                       headers=bearer(server["runner"]))
    assert done.status_code == 200
    events = parse_sse(client.get(f"{SESSIONS}/{sid}/events", headers=bearer(server["alice"]))
                       .get_data(as_text=True))
    requested = [data for name, _, data in events if name == "permission.requested"]
    assert [r["tool_name"] for r in requested] == ["command_execution", "command_execution"]
    ended = [data for name, _, data in events if name == "turn.completed"]
    assert [data.get("interrupted") for data in ended].count(True) == 1


def test_a_stop_while_idle_ends_codex_and_completes_the_session(world):
    _, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world)
    try:
        seen(state, lambda line: line.get("type") == "thread.started", "the thread")
        started = time.monotonic()
        stop = state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
        took = time.monotonic() - started
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.completed == {"exit_code": 0}
    assert state.acks[stop] == {"outcome": "done"}
    assert "stopping the agent (asked by alice)" in err
    assert took < 5  # EOF ended it: no SIGTERM after the grace period
    record("interactive, real Codex CLI", stop_to_exit_ms=round(took * 1000))


def test_a_killed_runner_resumed_delivers_once_and_continues_the_codex_thread(world):
    model, turnlog, _, tmp_path = world
    state = turnlog.state
    proc = start(world, "--prompt", "Remember the word teapot.")
    try:
        seen(state, said("Noted: teapot."), "the first answer")
        thread = next(line["thread_id"] for line in state.stdout_json()
                      if line.get("type") == "thread.started")
        held = state.push_input_holding_its_ack(1, "0d4f3c2b-1a09-4e8d-b7c6-a5f4e3d2c1b0", "Say once.",
                                                timeout=DEADLINE)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    spooled, _ = load(spool_path(tmp_path / "spool", state.session_id))
    assert held in spooled.commands_done
    assert spooled.agent_session_id == thread
    time.sleep(1)  # the orphaned CLI sees the end of its stdin and exits

    state.hold_acks.clear()
    resumed = start(world, "--prompt", "Remember the word teapot.", session=state.session_id)
    try:
        state.wait(lambda: held in state.acks, timeout=DEADLINE, what="the resumed ack")
        after = state.push("input", input_id=2, uuid="5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
                           content="And now after.")
        state.wait(lambda: after in state.acks, timeout=DEADLINE, what="the second ack")
        seen(state, said("After the resume."), "the turn after the resume")
        state.wait(lambda: state.stdout_json()[-1].get("type") == "turn.completed",
                   timeout=DEADLINE, what="its end")
        state.push("stop", requested_by="alice")
        _, err = resumed.communicate(timeout=DEADLINE)
    finally:
        reap(resumed)
    assert resumed.returncode == 0, err
    assert state.completed == {"exit_code": 0}
    threads = [line["thread_id"] for line in state.stdout_json()
               if line.get("type") == "thread.started"]
    assert threads == [thread, thread]  # the resumed CLI continued the same thread
    assert asked(model, "Remember the word teapot.") == 1  # the --prompt: once
    assert asked(model, "Say once.") <= 1  # the held input: never again after the resume
    with model.lock:  # the resumed thread sent the earlier conversation with the new prompt
        last = [r["body"] for r in model.requests if r["body"].get("tools")][-1]
    assert "teapot" in json.dumps(last["input"])
    totals = [line["usage"]["input_tokens"] for line in state.stdout_json()
              if line.get("type") == "turn.completed"]
    # a running total for the thread, across the resume: the last counts the first turn's
    # input too (each model call here reads 120; the first turn's end may not have been
    # posted before the kill)
    assert totals == sorted(totals) and totals[-1] >= 2 * scenarios.DEFAULT_USAGE["input"]


def test_a_prompt_sent_while_a_turn_runs_steers_it(world):
    _, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world)
    try:
        seen(state, lambda line: line.get("type") == "thread.started", "the thread")
        state.push("input", input_id=1, uuid="1a2b3c4d-0000-4000-8000-000000000001",
                   content="Run a slow command.")
        seen(state, lambda line: line.get("type") == "turnlog.permission_request", "the ask")
        ask = next(line for line in state.stdout_json()
                   if line.get("type") == "turnlog.permission_request")
        state.push("permission", request_id=ask["request_id"], behavior="allow", message=None,
                   state="allowed")
        steer = state.push("input", input_id=2, uuid="1a2b3c4d-0000-4000-8000-000000000002",
                           content="Also say that you were steered.")
        state.wait(lambda: steer in state.acks, timeout=DEADLINE, what="the steer's ack")
        seen(state, said("Finished, and steered."), "the turn's answer")
        state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.acks[steer] == {"outcome": "done"}
    kinds = [(line.get("type"), line.get("uuid") or line.get("item", {}).get("type"))
             for line in state.stdout_json()]
    steered = kinds.index(("turnlog.user", "1a2b3c4d-0000-4000-8000-000000000002"))
    ran = kinds.index(("item.completed", "command_execution"))
    assert kinds.count(("turn.started", None)) == 1  # one turn took both prompts
    assert ran < steered < kinds.index(("turn.completed", None))  # taken after the command


def test_an_interrupt_while_a_permission_waits_withdraws_it(world):
    _, turnlog, agent, _ = world
    state = turnlog.state
    proc = start(world)
    try:
        seen(state, lambda line: line.get("type") == "thread.started", "the thread")
        state.push("input", input_id=1, uuid="2b3c4d5e-0000-4000-8000-000000000001",
                   content=PROMPTS[0])
        seen(state, lambda line: line.get("type") == "turnlog.permission_request", "the ask")
        ask = next(line for line in state.stdout_json()
                   if line.get("type") == "turnlog.permission_request")
        state.push("interrupt")
        seen(state, lambda line: line.get("type") == "turnlog.interrupted", "the interrupted turn")
        seen(state, lambda line: line.get("type") == "turnlog.permission_withdrawn"
             and line["request_id"] == ask["request_id"], "the withdrawal")
        late = state.push("permission", request_id=ask["request_id"], behavior="allow",
                          message=None, state="allowed")
        state.wait(lambda: late in state.acks, timeout=DEADLINE, what="the late answer's ack")
        state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.acks[late]["outcome"] == "failed"  # Codex no longer asks: nothing to answer
    assert "no pending permission request" in state.acks[late]["reason"]
    assert not (agent.cwd / "approved.txt").exists()


def test_a_failed_turn_ends_failed_and_the_next_prompt_works(world, server):
    _, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world, "--prompt", "This request fails.")
    try:
        seen(state, lambda line: line.get("type") == "turn.failed", "the failed turn")
        state.push("input", input_id=1, uuid=server["uuids"][3], content=PROMPTS[3])
        seen(state, said("Done after the interrupt."), "the next turn")
        state.wait(lambda: state.stdout_json()[-1].get("type") == "turn.completed",
                   timeout=DEADLINE, what="its end")
        state.push("stop", requested_by="alice")
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    failed = next(line for line in state.stdout_json() if line.get("type") == "turn.failed")
    assert "turnlog fake: refused" in failed["error"]["message"]
    client, sid = server["client"], server["sid"]
    chunks = [{"seq": n, "data": text} for n, text in enumerate(state.stdout())]
    assert client.post(f"{SESSIONS}/{sid}/output", json={"chunks": chunks},
                       headers=bearer(server["runner"])).status_code == 200
    messages = client.get(f"{SESSIONS}/{sid}/messages",
                          headers=bearer(server["alice"])).get_json()["messages"]
    rows = [(m["role"], m["metadata"].get("terminal_reason"), m["content"]) for m in messages]
    assert [row[:2] for row in rows] == [("system", None), ("user", None), ("system", None),
                                         ("system", "error"), ("user", None),
                                         ("assistant", "success")]
    assert "turnlog fake: refused" in rows[3][2]  # the failed turn says why
    assert [row[2] for row in rows[4:]] == [PROMPTS[3], "Done after the interrupt."]


def test_ctrl_c_during_a_turn_stops_codex_at_once_and_completes_the_session(world):
    model, turnlog, _, _ = world
    state = turnlog.state
    proc = start(world, "--prompt", PROMPTS[2])
    try:
        state.wait(lambda: asked(model, PROMPTS[2]), timeout=DEADLINE, what="the slow request")
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=DEADLINE)
        took = time.monotonic() - started
    finally:
        reap(proc)
    assert proc.returncode == 0, err
    assert state.completed == {"exit_code": 0}
    assert "stopping the agent (asked by this terminal)" in err
    assert took < 5  # app-server ends at the end of its stdin, mid-turn: no SIGTERM needed
    assert not any(said("and then " * 30)(line) for line in state.stdout_json())
    record("interactive, real Codex CLI", ctrl_c_mid_turn_to_exit_ms=round(took * 1000))
