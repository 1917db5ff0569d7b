"""Before and around the agent's start, against a fake server: no session for a command
that cannot run, a session completed as failed for an agent that could not start, what
a session records of the run, the pass-through to the terminal, and the heartbeat."""
import io
import queue
import signal
import sys
import threading

import pytest

from app.client.batcher import Batcher
from app.client.child import Tee
from app.client.child import check_runnable
from app.client.errors import CANNOT_RUN
from app.client.errors import NOT_FOUND
from app.client.errors import ApiError
from app.client.errors import RunnerFailed
from app.client.errors import Unreachable
from app.client.runner import Heartbeat
from app.client.runner import Pump
from app.client.runner import Recorder
from app.client.runner import RunRequest
from app.client.runner import run
from app.client.runner import run_facts
from app.client.sender import Sender
from app.client.spool import Spool

SID = "5f0c9a7e-2b1d-4c3e-8f6a-0d9e8c7b6a51"


class FakeServer:
    """Records what the runner asks; refuses as a server from before issue 32 would the
    body fields named in `unknown`."""

    server = "http://server"

    def __init__(self, unknown=()):
        self.unknown = set(unknown)
        self.opened, self.completed, self.posted, self.attached = [], [], [], []

    def _check(self, body):
        refused = {name for name, value in body.items() if value is not None} & self.unknown
        if refused:
            raise ApiError(422, "validation_error", "Invalid fields.",
                           {"fields": {name: ["Unknown field."] for name in refused}})

    def open_session(self, session_type, **fields):
        self._check(fields)
        self.opened.append(fields)
        return {"session": {"session_id": SID}}

    def with_token(self, token):
        return self

    def viewer_url(self, session_id):
        return f"{self.server}/sessions/{session_id}"

    def post_output(self, session_id, chunks, usage=()):
        self.posted.extend(chunks)
        return {"accepted": len(chunks)}

    def complete(self, session_id, exit_code=None, reason=None):
        self._check({"reason": reason})
        self.completed.append((exit_code, reason))
        return {"status": "failed" if exit_code else "completed"}

    def attach_runner(self, session_id, controls):
        self.attached.append(list(controls))
        return {"runner": {"attached": True}}


@pytest.fixture
def signals_kept():
    """run() installs SIGINT and SIGTERM handlers: put pytest's back afterwards."""
    kept = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in kept.items():
        signal.signal(number, handler)


def request(tmp_path, command, **extra):
    return RunRequest(command=tuple(command), spool_dir=str(tmp_path / "spool"), **extra)


def test_a_command_that_cannot_be_found_opens_no_session(tmp_path, signals_kept):
    server = FakeServer()
    code = run(server, request(tmp_path, ["no-such-agent-anywhere", "-p", "hi"]))
    assert code == NOT_FOUND
    assert server.opened == [] and not (tmp_path / "spool").exists()


def test_a_path_that_is_no_executable_is_refused_before_anything(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("hello")
    with pytest.raises(RunnerFailed) as refused:
        check_runnable([str(plain)], {"PATH": ""})
    assert refused.value.exit_code == CANNOT_RUN and "chmod +x" in str(refused.value)
    with pytest.raises(RunnerFailed) as missing:
        check_runnable([str(tmp_path / "gone")], {"PATH": ""})
    assert missing.value.exit_code == NOT_FOUND
    check_runnable([sys.executable], {"PATH": ""})
    check_runnable(["sh"], {"PATH": "/bin:/usr/bin"})


def test_an_agent_that_cannot_start_completes_its_session_failed_and_leaves_no_spool(
        tmp_path, signals_kept):
    # found and executable, but its interpreter is not there: exec fails after the open
    script = tmp_path / "agent"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    server = FakeServer()
    code = run(server, request(tmp_path, [str(script)]))
    assert code == NOT_FOUND
    [(exit_code, reason)] = server.completed
    assert exit_code == NOT_FOUND and reason.startswith(f"cannot start {str(script)!r}")
    assert list((tmp_path / "spool").iterdir()) == []


def test_a_server_from_before_the_reason_still_gets_the_failure(tmp_path, signals_kept):
    script = tmp_path / "agent"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    server = FakeServer(unknown={"reason"})
    assert run(server, request(tmp_path, [str(script)])) == NOT_FOUND
    assert server.completed == [(NOT_FOUND, None)]


def test_the_session_records_the_command_redacted_and_the_first_prompt(tmp_path, signals_kept):
    server = FakeServer()
    command = [sys.executable, "-c", "print('done')", "--api-key", "hunter2"]
    assert run(server, request(tmp_path, command)) == 0
    [opened] = server.opened
    assert opened["command"] == [sys.executable, "-c", "print('done')", "--api-key", "[redacted]"]
    assert "prompt" not in opened  # python is no agent: no prompt made up
    assert [c["data"] for c in server.posted] == ["done"]
    assert server.completed == [(0, None)]


def test_the_prompt_of_an_agents_command_line_and_of_an_interactive_run():
    plain = RunRequest(command=("claude", "-p", "fix the pager", "--token", "t"), spool_dir="s")
    assert run_facts(plain) == {"command": ["claude", "-p", "fix the pager", "--token", "[redacted]"],
                                "prompt": "fix the pager"}
    driven = RunRequest(command=("claude",), spool_dir="s", interactive=True, prompt="first input")
    assert run_facts(driven)["prompt"] == "first input"


def test_a_server_that_knows_no_command_or_prompt_opens_the_session_without(tmp_path, signals_kept):
    server = FakeServer(unknown={"command", "prompt"})
    assert run(server, request(tmp_path, [sys.executable, "-c", "pass"])) == 0
    assert [set(fields) & {"command", "prompt"} for fields in server.opened] == [set()]


class Pipe(io.BytesIO):
    def __init__(self, broken=False):
        super().__init__()
        self.broken = broken

    def write(self, data):
        if self.broken:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(data)


def test_the_tee_passes_each_stream_through_and_a_closed_one_stops_alone():
    out, err = Pipe(), Pipe(broken=True)
    tee = Tee(out, err)
    tee.write("stdout", b"one\n")
    tee.write("stderr", b"oops\n")
    tee.write("stderr", b"again\n")
    tee.write("stdout", b"two\n")
    assert out.getvalue() == b"one\ntwo\n"
    assert tee.targets["stderr"] is None


def test_run_with_tee_shows_the_agents_output_as_it_printed_it(tmp_path, signals_kept, capfdbinary):
    command = [sys.executable, "-c", "import sys; print('to out'); print('to err', file=sys.stderr)"]
    server = FakeServer()
    assert run(server, request(tmp_path, command, tee=True)) == 0
    seen = capfdbinary.readouterr()
    assert seen.out == b"to out\n"
    assert b"to err\n" in seen.err
    assert sorted(c["data"] for c in server.posted) == ["to err", "to out"]  # still posted


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_heartbeat_is_due_a_period_after_the_last_post_and_a_failure_is_said_once(capsys):
    clock, server = Clock(), FakeServer()
    beat = Heartbeat(server, SID, seconds=20, clock=clock)
    clock.now += 15
    assert beat.due_in() == 5
    beat.seen()  # a batch went out
    clock.now += 20
    assert beat.due_in() == 0
    beat.say()
    assert server.attached == [[]] and beat.due_in() == 20

    def unreachable(session_id, controls):
        raise Unreachable("cannot reach http://server: connection refused")
    server.attach_runner = unreachable
    beat.say()
    beat.say()
    assert capsys.readouterr().err.count("heartbeat:") == 1


class QuietChild:
    """A child that prints nothing for `seconds`, then closes both streams."""

    def __init__(self, seconds):
        self.lines = queue.Queue()
        self.open_streams = 2
        timer = threading.Timer(seconds, lambda: (self.lines.put(None), self.lines.put(None)))
        timer.daemon = True
        timer.start()


def test_the_pump_says_it_is_there_while_the_child_is_quiet(tmp_path):
    spool = Spool.create(tmp_path, SID, "http://server")
    server = FakeServer()
    pump = Pump(server, SID, spool, QuietChild(0.5), Sender(log=lambda _: None), Batcher(), "claude")
    pump.heartbeat = Heartbeat(server, SID, seconds=0.1)
    pump.run()
    spool.close()
    assert 3 <= len(server.attached) <= 6 and server.attached[0] == []


def test_lines_as_they_come_make_heartbeats_needless(tmp_path):
    spool = Spool.create(tmp_path, SID, "http://server")
    server = FakeServer()
    child = QuietChild(0.3)
    recorder = Recorder(spool, 0)
    for n in range(3):
        child.lines.put(recorder("stdout", f"line {n}"))
    pump = Pump(server, SID, spool, child, Sender(log=lambda _: None), Batcher(), "claude")
    pump.heartbeat = Heartbeat(server, SID, seconds=10)
    pump.run()
    spool.close()
    assert server.attached == [] and len(server.posted) == 3
