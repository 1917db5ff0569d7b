"""The drivers of `turnlog run --interactive` (app/client/drivers) on a fake stdin: the
Claude command line, the lines written for an input, a permission answer and an interrupt,
the lines read; the generic driver; and driver_for."""
import io
import json
import signal

import pytest

from app.client.drivers import DriveFailed
from app.client.drivers import NotSupported
from app.client.drivers import driver_for
from app.client.drivers.base import GenericDriver
from app.client.drivers.claude import ClaudeDriver
from app.client.errors import RunnerFailed


class Stdin(io.BytesIO):
    def close(self):  # keep what was written readable after the driver closes it
        self.closed_now = True

    @property
    def closed(self):
        return getattr(self, "closed_now", False)

    def lines(self):
        return [json.loads(line) for line in self.getvalue().decode().splitlines()]


class FakeChild:
    def __init__(self, running=True):
        self.signals = []
        self._running = running

    def running(self):
        return self._running

    def signal(self, number):
        self.signals.append(number)


def bound(driver):
    stdin = Stdin()
    driver.bind(stdin)
    return driver, stdin


def test_claude_adds_the_flags_the_user_left_out_and_says_which():
    argv, added = ClaudeDriver().command(["claude", "--verbose", "--output-format=stream-json",
                                          "--model", "opus"])
    assert argv == ["claude", "--verbose", "--output-format=stream-json", "--model", "opus", "-p",
                    "--input-format", "stream-json", "--permission-prompt-tool", "stdio",
                    "--replay-user-messages"]
    assert added == ["-p", "--input-format stream-json", "--permission-prompt-tool stdio",
                     "--replay-user-messages"]


def test_claude_takes_print_for_p_and_adds_nothing_to_a_complete_command():
    full = ["claude", "--print", "--input-format", "stream-json", "--output-format", "stream-json",
            "--verbose", "--permission-prompt-tool", "stdio", "--replay-user-messages"]
    assert ClaudeDriver().command(full) == (full, [])


def test_claude_refuses_a_command_that_sets_a_needed_flag_otherwise():
    with pytest.raises(RunnerFailed, match="--output-format 'json'"):
        ClaudeDriver().command(["claude", "--output-format", "json"])


def test_claude_resumes_its_own_session_unless_the_user_named_one():
    argv, added = ClaudeDriver().command(["claude"], resume_id="abc")
    assert argv[-2:] == ["--resume", "abc"] and added[-1] == "--resume abc"
    argv, _ = ClaudeDriver().command(["claude", "--resume", "mine"], resume_id="abc")
    assert "abc" not in argv


def test_claude_writes_an_input_as_a_user_line_under_its_uuid():
    driver, stdin = bound(ClaudeDriver())
    driver.send("u-1", "héllo")
    assert stdin.lines() == [{"type": "user", "message": {"role": "user", "content": "héllo"},
                              "uuid": "u-1"}]


def test_claude_allows_with_the_requests_own_input_and_denies_with_the_message():
    driver, stdin = bound(ClaudeDriver())
    for request_id in ("R1", "R2"):
        ask = {"type": "control_request", "request_id": request_id, "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": request_id}}}
        assert driver.on_line(json.dumps(ask)) == [json.dumps(ask)]
    driver.answer("R1", "allow")
    driver.answer("R2", "deny", "not that")
    allow, deny = (line["response"] for line in stdin.lines())
    assert allow == {"subtype": "success", "request_id": "R1",
                     "response": {"behavior": "allow", "updatedInput": {"command": "R1"}}}
    assert deny["response"] == {"behavior": "deny", "message": "not that", "interrupt": False}
    with pytest.raises(DriveFailed, match="R1"):  # answered already
        driver.answer("R1", "allow")


def test_claude_forgets_a_withdrawn_request():
    driver, _ = bound(ClaudeDriver())
    driver.on_line(json.dumps({"type": "control_request", "request_id": "R", "request": {
        "subtype": "can_use_tool", "input": {}}}))
    driver.on_line(json.dumps({"type": "control_cancel_request", "request_id": "R"}))
    with pytest.raises(DriveFailed):
        driver.answer("R", "allow")


def test_claude_interrupts_with_a_control_request_of_its_own_id():
    driver, stdin = bound(ClaudeDriver())
    driver.interrupt(FakeChild())
    driver.interrupt(FakeChild())
    first, second = stdin.lines()
    assert first["request"] == {"subtype": "interrupt"}
    assert first["request_id"] != second["request_id"]
    assert first["request_id"].startswith("turnlog-interrupt-")


def test_claude_notes_its_session_id_and_passes_every_line_on():
    driver = ClaudeDriver()
    for text in ("not json", "[1]", json.dumps({"type": "system", "session_id": "S1"})):
        assert driver.on_line(text) == [text]
    assert driver.agent_session_id == "S1"


def test_a_closed_stdin_fails_the_write():
    driver, _ = bound(ClaudeDriver())
    driver.close_stdin()
    driver.close_stdin()  # twice is fine
    with pytest.raises(DriveFailed, match="stdin is closed"):
        driver.send("u", "x")


def test_the_generic_driver_interrupts_with_sigint_and_offers_no_send_nor_permissions():
    driver, _ = bound(GenericDriver())
    assert driver.controls == ("interrupt", "stop")
    child = FakeChild()
    driver.interrupt(child)
    assert child.signals == [signal.SIGINT]
    with pytest.raises(NotSupported):
        driver.send("u", "x")
    with pytest.raises(NotSupported):
        driver.answer("R", "allow")
    with pytest.raises(DriveFailed):
        driver.interrupt(FakeChild(running=False))
    assert driver.command(["cat", "-n"]) == (["cat", "-n"], [])


def test_driver_for_picks_claude_by_the_programs_name_and_generic_otherwise():
    assert driver_for("auto", ["/opt/bin/claude", "-p"]).name == "claude"
    assert driver_for("auto", ["python", "agent.py"]).name == "generic"
    assert driver_for("claude", ["python", "fake.py"]).name == "claude"
    assert driver_for("generic", ["claude"]).name == "generic"


def test_bind_hands_a_driver_the_way_to_post_lines_of_its_own():
    posted = []
    driver = GenericDriver()
    driver.bind(Stdin(), posted.append)
    driver.emit('{"type": "turnlog.interrupted"}')
    assert posted == ['{"type": "turnlog.interrupted"}']
