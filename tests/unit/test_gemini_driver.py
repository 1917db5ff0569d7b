"""The Gemini driver (app/client/drivers/gemini.py, acp.py) on a fake stdin, replaying a
real `gemini --acp` exchange (tests/fixtures/interactive/gemini-0.61.0, made by
tests/agents/acp_capture.py): it writes what the real client wrote, and posts the lines
the server's Gemini parser reads; plus the command line, the queue of inputs, the
resumed session's load and the agent's other requests."""
import json
from pathlib import Path

import click
import pytest
from click.core import ParameterSource
from click.testing import CliRunner

from app.client.commands import driven_provider
from app.client.commands import run
from app.client.drivers import QUEUED
from app.client.drivers import DriveFailed
from app.client.drivers import driver_for
from app.client.drivers.acp import Translator
from app.client.drivers.acp import tool_input
from app.client.drivers.acp import tool_name
from app.client.drivers.gemini import GeminiDriver
from app.client.drivers.gemini import session_started
from app.client.errors import RunnerFailed
from app.providers.gemini import parse_line
from app.transcript.event_types import IGNORED
from tests.agents import clis
from tests.unit.test_client_drivers import Stdin

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "interactive" \
    / f"gemini-{clis.pinned('gemini')}" / "acp_session.jsonl"
CWD = "/tmp/capture/work"


class Clock:
    def __init__(self, now=1_800_000_000.0):
        self.now = now

    def __call__(self):
        self.now += 0.0001  # far below a millisecond: the lines' stamps must still differ
        return self.now


class Timers:
    """threading.Timer's shape: records the wait, runs the function when told."""

    def __init__(self):
        self.made = []

    def __call__(self, wait, function):
        timers = self

        class Timer:
            daemon = False

            def start(self):
                timers.made.append((wait, function))
        return Timer()


def driver(**kwargs):
    posted = []
    made = GeminiDriver(clock=kwargs.pop("clock", Clock()), cwd=CWD, **kwargs)
    stdin = Stdin()
    made.bind(stdin, posted.append)
    return made, stdin, posted


def agent_says(made, message):
    assert made.on_line(json.dumps(message)) == []


def replay():
    """The capture played through a driver: the client's part done by the driver's calls."""
    made, stdin, posted = driver()
    records = [json.loads(line) for line in CAPTURE.read_text().splitlines()]
    wanted = [record["message"] for record in records if record["from"] == "client"]
    number = 0
    for record in records:
        message = record["message"]
        if record["from"] == "agent":
            agent_says(made, message)
            if message.get("method") == "session/request_permission":
                request_id = message["params"]["toolCall"]["toolCallId"]
                allow = request_id.startswith("run_shell_command")
                made.answer(request_id, "allow" if allow else "deny", None if allow else "no writes")
        elif message.get("method") == "session/prompt":
            number += 1
            made.send(f"uuid-{number}", message["params"]["prompt"][0]["text"])
        elif message.get("method") == "session/cancel":
            made.interrupt(None)
    return made, stdin.lines(), wanted, [json.loads(line) for line in posted]


def test_the_driver_writes_what_the_real_client_wrote_in_the_captured_exchange():
    made, written, wanted, _ = replay()
    assert written == wanted
    assert written[0]["params"] == {"protocolVersion": 1, "clientCapabilities": {}}
    assert made.agent_session_id == wanted[2]["params"]["sessionId"]


def test_the_lines_it_posts_are_gemini_stream_json_and_turnlog_lines_in_the_order_of_events():
    _, _, _, posted = replay()
    kinds = [line["type"] for line in posted]
    turn = ["message", "message", "result"]
    assert kinds == (["init", "turnlog.user", *turn,
                      "turnlog.user", "tool_use", "turnlog.permission_request", "tool_result", *turn,
                      "turnlog.user", "tool_use", "turnlog.permission_request", "tool_result", *turn,
                      "turnlog.user", "message", "turnlog.interrupted",
                      "turnlog.user", *turn])
    for line in posted:  # the server's parser knows each one
        event = parse_line(json.dumps(line))
        assert event.kind != IGNORED or event.info.get("reason") not in (
            "unknown_type", "not_json"), line
    stamps = [line["timestamp"] for line in posted if "timestamp" in line]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_the_translated_lines_carry_the_tool_calls_the_answers_and_the_usage():
    _, _, _, posted = replay()
    assert posted[0]["model"] == "gemini-2.5-flash"
    users = [line for line in posted if line["type"] == "turnlog.user"]
    assert [line["uuid"] for line in users] == ["uuid-1", "uuid-2", "uuid-3", "uuid-4", "uuid-5"]
    assert users[1]["content"] == "Create approved.txt with touch."
    asks = [line for line in posted if line["type"] == "turnlog.permission_request"]
    assert asks[0]["tool_name"] == "run_shell_command"
    assert asks[0]["input"] == {"command": "touch approved.txt && echo created"}
    assert asks[1]["tool_name"] == "write_file"
    assert asks[1]["input"] == {"file_path": f"{CWD}/notes.txt", "content": "written by the model\n"}
    uses = [line for line in posted if line["type"] == "tool_use"]
    assert [use["tool_id"] for use in uses] == [ask["request_id"] for ask in asks]
    results = [line for line in posted if line["type"] == "tool_result"]
    assert (results[0]["status"], results[0]["output"]) == ("success", "")  # shell output never comes
    assert results[1]["status"] == "error"
    assert results[1]["error"]["message"] == "denied: no writes"
    ends = [line for line in posted if line["type"] == "result"]
    assert ends[0]["status"] == "success"
    assert ends[0]["stats"]["input_tokens"] == 210 and ends[0]["stats"]["output_tokens"] == 11
    assert ends[1]["stats"]["tool_calls"] == 1 and ends[1]["stats"]["total_tokens"] == 669
    text = "".join(line["content"] for line in posted[:5] if line["type"] == "message")
    assert text == "Hello, turnlog! This is a plain answer."


def test_allow_selects_the_allow_once_option_and_deny_the_reject_option():
    _, written, _, _ = replay()
    answers = [m["result"]["outcome"] for m in written if "result" in m]
    assert answers == [{"outcome": "selected", "optionId": "proceed_once"},
                       {"outcome": "selected", "optionId": "cancel"}]


def ready(**kwargs):
    """A driver whose session is open (initialize and session/new answered)."""
    made, stdin, posted = driver(**kwargs)
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s-1"}})
    return made, stdin, posted


def test_inputs_wait_for_the_session_and_for_the_running_turn_one_at_a_time():
    made, stdin, posted = driver()
    made.send("u-1", "first")  # before the handshake is done: it waits
    assert [m["method"] for m in stdin.lines()] == ["initialize"]
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s-1"}})
    made.send("u-2", "second")  # the first runs: the CLI would abort it for another prompt
    prompts = [m for m in stdin.lines() if m.get("method") == "session/prompt"]
    assert [m["params"]["prompt"][0]["text"] for m in prompts] == ["first"]
    agent_says(made, {"jsonrpc": "2.0", "id": prompts[0]["id"], "result": {"stopReason": "end_turn"}})
    prompts = [m for m in stdin.lines() if m.get("method") == "session/prompt"]
    assert [m["params"]["prompt"][0]["text"] for m in prompts] == ["first", "second"]
    kinds = [json.loads(line)["type"] for line in posted]
    assert kinds == ["init", "turnlog.user", "result", "turnlog.user"]  # the second after the first's end


def test_the_runner_is_told_when_a_held_input_is_written_or_dropped():
    made, stdin, posted = driver()
    told = []
    made.on_sent = lambda uuid: told.append(("sent", uuid))
    made.on_dropped = lambda uuid, reason: told.append(("dropped", uuid))
    assert made.send("u-1", "first") == QUEUED  # before the handshake
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s-1"}})
    assert told == [("sent", "u-1")]  # written once the session opened
    assert made.send("u-2", "second") == QUEUED and made.send("u-3", "third") == QUEUED
    prompt = [m for m in stdin.lines() if m.get("method") == "session/prompt"][-1]
    agent_says(made, {"jsonrpc": "2.0", "id": prompt["id"], "result": {"stopReason": "end_turn"}})
    assert told == [("sent", "u-1"), ("sent", "u-2")]
    made.close_stdin()
    assert told[-1] == ("dropped", "u-3")


def test_an_input_written_at_once_is_not_held():
    made, stdin, posted = ready()
    told = []
    made.on_sent = told.append
    assert made.send("u-9", "now") is None and told == []


def test_interrupt_withdraws_a_pending_request_then_cancels_and_marks_the_turn():
    made, stdin, posted = ready()
    made.send("u-1", "go")
    agent_says(made, {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s-1", "options": [{"optionId": "proceed_once", "kind": "allow_once"}],
        "toolCall": {"toolCallId": "run_shell_command__x_1", "title": "rm -r /", "kind": "execute"}}})
    made.interrupt(None)
    written = stdin.lines()
    assert written[-2] == {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}}
    assert written[-1] == {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}}
    with pytest.raises(DriveFailed, match="no pending permission"):
        made.answer("run_shell_command__x_1", "allow")
    agent_says(made, {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}})
    kinds = [json.loads(line)["type"] for line in posted]
    # turnlog.interrupted in place of the turn's end line
    assert kinds == ["init", "turnlog.user", "tool_use", "turnlog.permission_request",
                     "tool_result", "turnlog.permission_withdrawn", "turnlog.interrupted"]
    with pytest.raises(DriveFailed, match="no turn is running"):
        made.interrupt(None)


def test_a_failed_prompt_and_a_stopped_turn_end_with_an_error_result():
    made, stdin, posted = ready()
    made.send("u-1", "one")
    made.send("u-2", "two")
    agent_says(made, {"jsonrpc": "2.0", "id": 3, "error": {"code": 429, "message": "Rate limit"}})
    agent_says(made, {"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "max_turn_requests"}})
    ends = [json.loads(line) for line in posted if json.loads(line)["type"] == "result"]
    assert [(end["status"], end["error"]["type"]) for end in ends] == [
        ("error", "acp_error"), ("error", "max_turn_requests")]
    assert ends[0]["error"]["message"] == "Rate limit"


def test_updates_outside_a_turn_are_not_posted_and_other_requests_are_refused():
    made, stdin, posted = ready()
    agent_says(made, {"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s-1", "update": {"sessionUpdate": "agent_message_chunk",
                                       "content": {"type": "text", "text": "old history"}}}})
    agent_says(made, {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {}})
    assert [json.loads(line)["type"] for line in posted] == ["init"]
    assert stdin.lines()[-1]["error"]["code"] == -32601
    assert made.on_line("not json at all") == ["not json at all"]


def test_a_resumed_session_is_loaded_in_a_later_minute_and_inputs_wait_for_it():
    timers = Timers()
    made = GeminiDriver(clock=lambda: 1_800_000_010.0, timer=timers, cwd=CWD,
                        find_start=lambda session_id: None)
    assert made.command(["gemini"], resume_id="s-old") == (["gemini", "--acp"], ["--acp"])
    stdin, posted = Stdin(), []
    made.bind(stdin, posted.append)
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})
    [(wait, load)] = timers.made
    assert wait == 50.5  # when it started is unknown: 10 s into a minute, the next is 50 s away
    made.send("u-1", "carry on")
    assert [m["method"] for m in stdin.lines()] == ["initialize"]
    load()
    assert stdin.lines()[-1]["params"] == {"sessionId": "s-old", "cwd": CWD, "mcpServers": []}
    assert stdin.lines()[-1]["method"] == "session/load"
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "result": {"models": {"currentModelId": "m"}}})
    assert stdin.lines()[-1]["method"] == "session/prompt"
    assert stdin.lines()[-1]["params"]["sessionId"] == "s-old"
    assert json.loads(posted[0])["session_id"] == "s-old"


def test_a_session_that_cannot_be_loaded_goes_on_as_a_new_one_and_says_so():
    timers = Timers()
    made = GeminiDriver(clock=lambda: 1_800_000_000.0, timer=timers, cwd=CWD,
                        find_start=lambda session_id: None)
    made.command(["gemini"], resume_id="s-gone")
    stdin, posted = Stdin(), []
    made.bind(stdin, posted.append)
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {}})
    timers.made[0][1]()
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "not found"}})
    assert stdin.lines()[-1]["method"] == "session/new"
    assert "could not load session s-gone" in json.loads(posted[0])["message"]


def test_a_refused_handshake_fails_the_inputs_and_ends_the_agents_input():
    made, stdin, posted = driver()
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {}})
    agent_says(made, {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "Auth"}})
    assert stdin.closed
    with pytest.raises(DriveFailed, match="refused session/new: Auth"):
        made.send("u", "hello")
    assert json.loads(posted[-1])["type"] == "error"


def test_the_command_gets_acp_added_and_headless_flags_refused():
    assert GeminiDriver().command(["gemini", "--model", "m"]) == (["gemini", "--model", "m", "--acp"],
                                                                  ["--acp"])
    assert GeminiDriver().command(["gemini", "--experimental-acp"]) == (
        ["gemini", "--experimental-acp"], [])
    for flag in ("-p", "--output-format=json", "--resume"):
        with pytest.raises(RunnerFailed, match="gemini --acp"):
            GeminiDriver().command(["gemini", flag, "x"])


def test_auto_picks_the_gemini_driver_for_a_program_named_gemini():
    assert driver_for("auto", ["/usr/local/bin/gemini"]).name == "gemini"
    assert driver_for("gemini", ["node", "gemini.js"]).controls == (
        "send", "permissions", "interrupt", "stop")


def test_a_tool_call_without_a_name_in_its_id_is_named_by_its_kind_and_its_title():
    call = {"toolCallId": "c1", "kind": "read", "title": "README.md",
            "locations": [{"path": "/w/README.md"}]}
    assert tool_name(call) == "read_file"
    assert tool_input(call) == {"title": "README.md", "locations": ["/w/README.md"]}
    assert tool_input({**call, "rawInput": {"path": "x"}}) == {"path": "x"}
    lines = Translator(Clock()).update({"sessionUpdate": "tool_call", "status": "completed", **call,
                                        "content": [{"type": "content",
                                                     "content": {"type": "text", "text": "# hi"}}]})
    assert [(json.loads(line)["type"], json.loads(line).get("output")) for line in lines] == [
        ("tool_use", None), ("tool_result", "# hi")]


def test_a_stop_cancels_the_running_turn_before_it_ends_the_agents_input():
    made, stdin, posted = ready()
    made.send("u-1", "go")
    made.send("u-2", "never sent")
    made.close_stdin()
    assert stdin.closed
    written = stdin.lines()
    assert written[-1] == {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}}
    assert [m["params"]["prompt"][0]["text"] for m in written if m.get("method") == "session/prompt"] \
        == ["go"]
    made.close_stdin()  # twice: nothing more
    assert stdin.lines() == written


def test_an_interactive_gemini_run_posts_as_gemini_unless_another_provider_was_asked_for():
    with click.Context(run) as context:
        context.set_parameter_source("provider", ParameterSource.DEFAULT)
        assert driven_provider("auto", ("gemini",), "claude") == "gemini"
        assert driven_provider("auto", ("claude",), "claude") == "claude"
        assert driven_provider("generic", ("gemini",), "codex") == "codex"
    refused = CliRunner().invoke(run, ["--server", "http://127.0.0.1:9", "--token", "t",
                                       "--interactive", "--provider", "claude", "--", "gemini"])
    assert refused.exit_code == 2
    assert "the gemini driver posts gemini lines: --provider gemini" in refused.output


def test_the_start_minute_is_the_latest_one_the_sessions_files_are_named_by(tmp_path):
    chats = tmp_path / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    for name in ("session-2027-01-15T08-00-4d2e0aba.json", "session-2027-01-15T08-30-4d2e0aba.jsonl",
                 "session-2027-01-15T09-00-ffffffff.jsonl", "session-garbage-4d2e0aba.jsonl"):
        (chats / name).write_text("{}")
    env = {"GEMINI_CLI_HOME": str(tmp_path)}
    assert session_started("4d2e0aba-4075-48b6-b48e-65a16299a051", env) == 1_800_001_800.0  # 08:30 UTC
    assert session_started("0badc0de-0000-4000-8000-000000000000", env) is None
    assert session_started("4d2e0aba-4075", {"HOME": str(tmp_path / "elsewhere")}) is None


@pytest.mark.parametrize("started, waits", [
    (1_800_000_000.0 - 120, None),  # two minutes ago: loaded at once
    (1_800_000_000.0, 20.5),  # this minute (40 s in): after the next one begins
])
def test_a_known_start_minute_decides_whether_the_load_waits(started, waits):
    timers = Timers()
    made = GeminiDriver(clock=lambda: 1_800_000_040.0, timer=timers, cwd=CWD,
                        find_start=lambda session_id: started)
    made.command(["gemini"], resume_id="s-old")
    stdin = Stdin()
    made.bind(stdin, [].append)
    agent_says(made, {"jsonrpc": "2.0", "id": 1, "result": {}})
    if waits is None:
        assert timers.made == [] and stdin.lines()[-1]["method"] == "session/load"
    else:
        assert [wait for wait, _ in timers.made] == [waits]
        assert stdin.lines()[-1]["method"] == "initialize"


def test_an_input_the_agent_cannot_take_any_more_fails_and_posts_no_prompt_line():
    made, stdin, posted = ready()
    stdin.close()
    with pytest.raises(DriveFailed, match="stdin is closed"):
        made.send("u-1", "too late")
    assert [json.loads(line)["type"] for line in posted] == ["init"]


def test_an_allow_the_request_has_no_option_for_is_a_cancel_and_closes_the_call():
    made, stdin, posted = ready()
    made.send("u-1", "go")
    agent_says(made, {"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {
        "sessionId": "s-1", "options": [{"optionId": "no", "kind": "reject_once"}],
        "toolCall": {"toolCallId": "t__1", "title": "x", "kind": "other"}}})
    made.answer("t__1", "allow")
    assert stdin.lines()[-1]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert json.loads(posted[-1])["type"] == "tool_result"
