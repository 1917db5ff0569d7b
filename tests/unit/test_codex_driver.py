"""The Codex driver (app/client/drivers/codex.py) on a fake stdin: the command line, and
exchanges recorded with the real `codex app-server` at the pinned version
(tests/fixtures/interactive/codex-<version>, made by tests/agents/capture_app_server.py;
0.169.0's stay beside it) played back through a fresh
driver: what it writes to the CLI, and the `codex exec --json` and `turnlog.*` lines it
posts instead of what the CLI printed."""
import contextlib
import io
import json
import os
import threading
import time
from pathlib import Path

import pytest

from app.client.drivers import DriveFailed
from app.client.drivers import driver_for
from app.client.drivers.codex import CodexDriver
from app.client.errors import RunnerFailed
from app.providers import codex as codex_parser
from app.transcript.event_types import IGNORED
from tests.agents import clis

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "interactive" / f"codex-{clis.pinned('codex')}"
EXEC_TYPES = {"thread.started", "turn.started", "item.started", "item.updated", "item.completed",
              "turn.completed", "turn.failed", "error"}


class Stdin(io.BytesIO):
    def close(self):
        self.closed_now = True

    @property
    def closed(self):
        return getattr(self, "closed_now", False)

    def lines(self):
        return [json.loads(line) for line in self.getvalue().decode().splitlines()]


def wait_for(predicate, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "the driver did not write what the recording has"
        time.sleep(0.002)


def play(name, driver=None):
    """Play a recording back: (the lines posted, what the driver wrote, the driver)."""
    entries = [json.loads(line) for line in
               (FIXTURES / f"app_server_{name}.jsonl").read_text().splitlines()]
    driver = driver or CodexDriver()
    driver.clock = lambda: 0.0  # the first piece of each reply is posted as it streams
    driver.command(["codex"])
    stdin = Stdin()
    driver.bind(stdin)
    posted, sends, written = [], [], 0
    for entry in entries:
        if "sent" in entry:
            written += 1
            continue
        # what the CLI printed next answered what the driver had written by then
        wait_for(lambda: len(stdin.lines()) >= written)
        if "printed" in entry:
            posted += [json.loads(text) for text in driver.on_line(json.dumps(entry["printed"]))]
        elif entry["control"]["do"] == "send":
            control = entry["control"]
            sends.append(threading.Thread(target=driver.send,
                                          args=(control["uuid"], control["content"])))
            sends[-1].start()
        elif entry["control"]["do"] == "answer":
            driver.answer(entry["control"]["request_id"], entry["control"]["behavior"])
        else:
            driver.interrupt(None)
    for thread in sends:
        thread.join(5)
        assert not thread.is_alive()
    recorded = [entry["sent"] for entry in entries if "sent" in entry]
    return posted, stdin.lines(), driver, recorded


def kinds(posted):
    return [line["type"] + (f"/{line['item']['type']}" if "item" in line else "")
            for line in posted]


def test_the_command_gains_app_server_and_says_so():
    driver = CodexDriver()
    assert driver.command(["codex", "-c", "model=\"o3\""]) == (
        ["codex", "app-server", "-c", "model=\"o3\""], ["app-server"])
    assert driver.command(["codex", "app-server"]) == (["codex", "app-server"], [])
    with pytest.raises(RunnerFailed, match="runs `codex app-server` itself"):
        CodexDriver().command(["codex", "exec", "--json", "hi"])


def test_a_policy_the_user_configured_is_left_to_the_cli():
    driver = CodexDriver()
    driver.command(["codex", "-c", "approval_policy=\"on-request\""])
    assert driver.thread_params == {"sandbox": "danger-full-access"}
    driver = CodexDriver()
    driver.command(["codex", "--config=sandbox_mode=\"workspace-write\""])
    assert driver.thread_params == {"approvalPolicy": "untrusted"}


def test_auto_picks_the_codex_driver_for_a_program_named_codex():
    assert driver_for("auto", ["/opt/bin/codex", "-c", "x=1"]).name == "codex"
    assert driver_for("codex", ["my-codex-wrapper"]).controls == (
        "send", "permissions", "interrupt", "stop")


def test_an_allowed_command_is_asked_for_accepted_and_said_as_exec_says_it():
    posted, written, driver, recorded = play("allow")
    assert [w.get("method") for w in written] == [r.get("method") for r in recorded]
    assert written[0]["method"] == "initialize" and written[1] == {
        "jsonrpc": "2.0", "method": "initialized"}
    assert written[2]["params"] == {"approvalPolicy": "untrusted", "sandbox": "danger-full-access"}
    assert written[3]["params"]["clientUserMessageId"] == "00000000-0000-4000-8000-000000000001"
    assert kinds(posted) == ["thread.started", "turn.started", "turnlog.user",
                             "item.started/command_execution", "turnlog.permission_request",
                             "item.completed/command_execution", "item.updated/agent_message",
                             "item.completed/agent_message", "turn.completed"]
    assert posted[0]["thread_id"] == driver.agent_session_id == driver.thread_id
    assert posted[2] == {"type": "turnlog.user", "uuid": "00000000-0000-4000-8000-000000000001",
                         "content": "Create approved.txt with touch."}
    ask = posted[4]
    assert ask["tool_name"] == "command_execution"
    assert ask["input"]["command"] == "/bin/bash -lc 'touch approved.txt && echo created'"
    assert ask["request_id"] == posted[3]["item"]["id"]  # the call's item id: unique in the thread
    assert written[4] == {"jsonrpc": "2.0", "id": 0, "result": {"decision": "accept"}}
    ran = posted[5]["item"]
    assert (ran["status"], ran["exit_code"], ran["aggregated_output"]) == ("completed", 0, "created\n")
    assert posted[-1]["usage"]["input_tokens"] == 640 and posted[-1]["usage"]["output_tokens"] == 29


def test_a_denied_command_is_declined_and_stored_declined():
    posted, written, _, _ = play("deny")
    assert written[4] == {"jsonrpc": "2.0", "id": 0, "result": {"decision": "decline"}}
    command = next(line for line in posted if line["type"] == "item.completed"
                   and line["item"]["type"] == "command_execution")
    assert command["item"]["status"] == "declined"
    assert not any(line["type"] == "turnlog.permission_withdrawn" for line in posted)


def test_an_interrupted_turn_ends_with_turnlog_interrupted_in_place_of_turn_completed():
    posted, written, driver, _ = play("interrupt")
    interrupt = next(w for w in written if w.get("method") == "turn/interrupt")
    assert interrupt["params"]["threadId"] == driver.thread_id
    assert kinds(posted) == ["thread.started", "turn.started", "turnlog.user",
                             "item.updated/agent_message", "turnlog.interrupted",
                             "turn.started", "turnlog.user", "item.updated/agent_message",
                             "item.completed/agent_message", "turn.completed"]
    assert posted[3]["item"]["text"].startswith("Once")  # what it had said when interrupted
    assert posted[-2]["item"]["text"] == "Done after the interrupt."
    assert driver.turn_id is None


def test_usage_is_the_threads_running_total_as_exec_prints_it():
    posted, _, _, _ = play("multi_turn")
    totals = [line["usage"] for line in posted if line["type"] == "turn.completed"]
    assert [(u["input_tokens"], u["cached_input_tokens"], u["output_tokens"]) for u in totals] == [
        (200, 0, 3), (460, 150, 6)]
    users = [line["uuid"] for line in posted if line["type"] == "turnlog.user"]
    assert users == ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"]


@pytest.mark.parametrize("name", ["allow", "deny", "interrupt", "multi_turn"])
def test_no_json_rpc_is_posted_and_the_codex_parser_reads_every_line(name):
    posted, _, _, _ = play(name)
    for line in posted:
        assert not {"jsonrpc", "method", "id", "params"} & set(line)
        assert line["type"] in EXEC_TYPES or line["type"].startswith("turnlog.")
        event = codex_parser.parse_line(json.dumps(line))
        assert event.kind != IGNORED or line["type"].startswith("turnlog.permission"), line


def opened():
    """A driver whose thread is open (the handshake answered), and its stdin."""
    driver, stdin = CodexDriver(), Stdin()
    driver.command(["codex"])
    driver.bind(stdin)
    driver.on_line(json.dumps({"id": 1, "result": {}}))
    driver.on_line(json.dumps({"id": 2, "result": {"thread": {"id": "th-1"}}}))
    return driver, stdin


def answer_next(driver, stdin, count, answer):
    """Answer the request the driver writes as its `count`-th line."""
    wait_for(lambda: len(stdin.lines()) >= count)
    request = stdin.lines()[count - 1]
    driver.on_line(json.dumps({"id": request["id"], **answer}))
    return request


def test_a_prompt_while_a_turn_runs_steers_it_and_a_late_one_starts_the_next():
    driver, stdin = opened()
    driver.on_line(json.dumps({"method": "turn/started", "params": {"turn": {"id": "t-1"}}}))
    steer = threading.Thread(target=driver.send, args=("u-1", "also this"))
    steer.start()
    request = answer_next(driver, stdin, 4, {"result": {"turnId": "t-1"}})
    steer.join(5)
    assert (request["method"], request["params"]["expectedTurnId"]) == ("turn/steer", "t-1")
    late = threading.Thread(target=driver.send, args=("u-2", "next"))
    late.start()  # the turn ended before the steer reached it: the prompt starts a turn
    answer_next(driver, stdin, 5, {"error": {"code": -32600, "message": "no active turn"}})
    start = answer_next(driver, stdin, 6, {"result": {"turn": {"id": "t-2",
                                                               "status": "inProgress"}}})
    late.join(5)
    assert (start["method"], start["params"]["clientUserMessageId"]) == ("turn/start", "u-2")
    assert driver.turn_id == "t-2"


def test_a_refused_prompt_fails_the_send():
    driver, stdin = opened()
    failed = []
    thread = threading.Thread(target=lambda: failed.append(_raises(driver.send, "u", "hi")))
    thread.start()
    answer_next(driver, stdin, 4, {"error": {"code": -32600, "message": "bad input"}})
    thread.join(5)
    assert failed == ["Codex refused the prompt: bad input"]


def _raises(call, *args):
    try:
        call(*args)
    except DriveFailed as err:
        return str(err)
    return None


def test_a_resumed_runner_resumes_the_thread_and_falls_back_to_a_new_one():
    driver, stdin = CodexDriver(), Stdin()
    driver.command(["codex"], resume_id="th-old")
    driver.bind(stdin)
    driver.on_line(json.dumps({"id": 1, "result": {}}))
    resume = stdin.lines()[2]
    assert (resume["method"], resume["params"]["threadId"]) == ("thread/resume", "th-old")
    posted = driver.on_line(json.dumps({"id": 2, "error": {"code": -1, "message": "no rollout"}}))
    assert "could not resume thread th-old (no rollout)" in json.loads(posted[0])["message"]
    assert stdin.lines()[3]["method"] == "thread/start"
    posted = driver.on_line(json.dumps({"id": 3, "result": {"thread": {"id": "th-new"}}}))
    assert json.loads(posted[0]) == {"type": "thread.started", "thread_id": "th-new"}
    assert driver.agent_session_id == "th-new"


def test_a_failed_handshake_fails_every_send_at_once():
    driver, stdin = CodexDriver(), Stdin()
    driver.command(["codex"])
    driver.bind(stdin)
    posted = driver.on_line(json.dumps({"id": 1, "error": {"code": -1, "message": "no auth"}}))
    assert json.loads(posted[0])["type"] == "error"
    with pytest.raises(DriveFailed, match="refused to initialize: no auth"):
        driver.send("u", "hi")


def test_a_request_codex_withdraws_is_withdrawn_and_cannot_be_answered():
    driver, stdin = opened()
    asked = driver.on_line(json.dumps({"method": "item/fileChange/requestApproval", "id": 7,
                                       "params": {"itemId": "fc-1", "reason": "write it"}}))
    assert json.loads(asked[0])["tool_name"] == "file_change"
    gone = driver.on_line(json.dumps({"method": "serverRequest/resolved",
                                      "params": {"threadId": "th-1", "requestId": 7}}))
    assert json.loads(gone[0]) == {"type": "turnlog.permission_withdrawn", "request_id": "fc-1"}
    with pytest.raises(DriveFailed, match="no pending permission request"):
        driver.answer("fc-1", "allow")


def test_a_request_the_runner_cannot_answer_is_refused_not_left_waiting():
    driver, stdin = opened()
    posted = driver.on_line(json.dumps({"method": "item/tool/requestUserInput", "id": 9,
                                        "params": {}}))
    assert stdin.lines()[-1]["id"] == 9 and stdin.lines()[-1]["error"]["code"] == -32601
    assert "item/tool/requestUserInput" in json.loads(posted[0])["message"]


def test_a_reply_streams_as_its_text_so_far_at_most_every_half_second():
    driver, _ = opened()
    now = [10.0]
    driver.clock = lambda: now[0]
    driver.on_line(json.dumps({"method": "turn/started", "params": {"turn": {"id": "t-1"}}}))
    posted = []
    for at, piece in ((10.0, "Once "), (10.2, "upon "), (10.6, "a "), (10.7, "time")):
        now[0] = at
        posted += driver.on_line(json.dumps({"method": "item/agentMessage/delta", "params": {
            "itemId": "m-1", "delta": piece}}))
    assert [json.loads(text)["item"]["text"] for text in posted] == ["Once ", "Once upon a "]
    end = driver.on_line(json.dumps({"method": "turn/completed", "params": {
        "turn": {"id": "t-1", "status": "interrupted"}}}))
    assert [json.loads(text) for text in end] == [
        {"type": "item.updated", "item": {"id": "m-1", "type": "agent_message",
                                          "text": "Once upon a time"}},
        {"type": "turnlog.interrupted"}]


def test_interrupt_needs_a_running_turn_and_noise_is_dropped():
    driver, _ = opened()
    with pytest.raises(DriveFailed, match="no turn is running"):
        driver.interrupt(None)
    assert driver.on_line(json.dumps({"method": "account/rateLimits/updated", "params": {}})) == []
    assert driver.on_line("not json") == ["not json"]


def test_a_codex_that_exited_fails_a_waiting_send_at_once_not_after_the_handshake_time():
    read_end, write_end = os.pipe()
    stdin = os.fdopen(write_end, "wb")
    driver = CodexDriver()
    driver.command(["codex"])
    driver.bind(stdin)  # written before it exited
    os.close(read_end)  # it exited: nothing reads its stdin any more
    started = time.monotonic()
    with pytest.raises(DriveFailed, match="Codex has exited"):
        driver.send("u", "hi")
    assert time.monotonic() - started < 2
    driver.close_stdin()


def test_a_codex_gone_before_the_handshake_is_a_failure_not_a_crash():
    read_end, write_end = os.pipe()
    os.close(read_end)
    driver = CodexDriver()
    driver.command(["codex"])
    driver.bind(os.fdopen(write_end, "wb"))
    with pytest.raises(DriveFailed, match="could not be started"):
        driver.send("u", "hi")
    with contextlib.suppress(OSError):  # a broken pipe: what was buffered cannot go
        driver.stdin.close()


def test_a_turn_that_counted_no_tokens_says_no_usage_rather_than_a_zero_total():
    driver, _ = opened()
    driver.on_line(json.dumps({"method": "turn/started", "params": {"turn": {"id": "t-1"}}}))
    ended = driver.on_line(json.dumps({"method": "turn/completed", "params": {
        "turn": {"id": "t-1", "status": "completed"}}}))
    assert [json.loads(text) for text in ended] == [{"type": "turn.completed"}]
    failed = driver.on_line(json.dumps({"method": "turn/completed", "params": {"turn": {
        "id": "t-2", "status": "failed", "error": {"message": "quota"}}}}))
    assert json.loads(failed[0]) == {"type": "turn.failed", "error": {"message": "quota"}}


def test_a_stop_ends_a_send_that_waits_for_codex():
    driver, stdin = opened()
    failed = []
    thread = threading.Thread(target=lambda: failed.append(_raises(driver.send, "u", "hi")))
    thread.start()
    wait_for(lambda: len(stdin.lines()) >= 4)  # turn/start written, never answered
    driver.close_stdin()
    thread.join(2)
    assert failed == ["the agent's stdin is closed (it is stopping)"]
