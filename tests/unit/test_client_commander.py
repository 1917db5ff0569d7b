"""The command handling of `turnlog run --interactive` (app/client/interactive/control.py)
on fakes: each command acted on in order, recorded before it is acknowledged, never acted
on twice (in one run or after a resume), failures acknowledged `failed` with the reason."""
import json
import subprocess

import requests
import urllib3

from app.client.drivers import QUEUED
from app.client.drivers import DriveFailed
from app.client.drivers import NotSupported
from app.client.errors import ApiError
from app.client.errors import Unreachable
from app.client.interactive.control import Channel
from app.client.interactive.control import Commander


class Journal(list):
    """What happened, in order, across the fakes."""


class FakeDriver:
    def __init__(self, journal, offers=("send", "permissions", "interrupt", "stop")):
        self.journal, self.offers = journal, offers
        self.closed = False

    def _check(self, control):
        if control not in self.offers:
            raise NotSupported(control)
        if self.closed:
            raise DriveFailed("the agent's stdin is closed")

    def send(self, uuid, content):
        self._check("send")
        self.journal.append(("send", uuid, content))
        return QUEUED if content.startswith("later") else None

    def answer(self, request_id, behavior, message=None):
        self._check("permissions")
        self.journal.append(("answer", request_id, behavior, message))

    def interrupt(self, child):
        self._check("interrupt")
        self.journal.append(("interrupt",))

    def close_stdin(self):
        self.closed = True
        self.journal.append(("close_stdin",))


class FakeProcess:
    def __init__(self, exits_after_signal=None):
        self.exits_after_signal = exits_after_signal
        self.signalled = []

    def wait(self, timeout=None):
        if self.exits_after_signal in self.signalled or self.exits_after_signal is None:
            return 0
        raise subprocess.TimeoutExpired("agent", timeout)


class FakeChild:
    def __init__(self, journal, process):
        self.journal, self.process = journal, process

    def signal(self, number):
        self.process.signalled.append(number)
        self.journal.append(("signal", int(number)))


class FakeSpool:
    def __init__(self, journal):
        self.journal = journal

    def record_command(self, command_id):
        self.journal.append(("record", command_id))


class FakeClient:
    def __init__(self, journal, failures=()):
        self.journal, self.failures = journal, list(failures)

    def ack_command(self, session_id, command_id, outcome="done", reason=None):
        if self.failures:
            raise self.failures.pop(0)
        self.journal.append(("ack", command_id, outcome, reason))


def commander(journal=None, *, done=(), offers=None, process=None, failures=()):
    journal = journal if journal is not None else Journal()
    driver = FakeDriver(journal, **({"offers": offers} if offers else {}))
    made = Commander(driver, FakeChild(journal, process or FakeProcess()), FakeSpool(journal),
                     FakeClient(journal, failures), "S", done=done, log=journal.append,
                     stop_grace=0)
    made.sleep = lambda seconds: journal.append(("sleep",))
    return made, journal


def test_each_command_is_acted_on_then_recorded_then_acknowledged_in_order():
    made, journal = commander()
    made.handle({"command_id": 1, "kind": "input", "uuid": "u1", "content": "hi"})
    made.handle({"command_id": 2, "kind": "permission", "request_id": "R", "behavior": "deny",
                 "message": "no"})
    made.handle({"command_id": 3, "kind": "interrupt"})
    assert journal == [("send", "u1", "hi"), ("record", 1), ("ack", 1, "done", None),
                       ("answer", "R", "deny", "no"), ("record", 2), ("ack", 2, "done", None),
                       ("interrupt",), ("record", 3), ("ack", 3, "done", None)]


def test_a_command_acted_on_before_is_only_acknowledged_again():
    made, journal = commander(done={7})
    made.handle({"command_id": 7, "kind": "input", "uuid": "u", "content": "once"})
    made.handle({"command_id": 8, "kind": "input", "uuid": "v", "content": "new"})
    made.handle({"command_id": 8, "kind": "input", "uuid": "v", "content": "new"})  # resent
    acted = [entry for entry in journal if isinstance(entry, tuple) and entry[0] == "send"]
    assert acted == [("send", "v", "new")]
    assert [entry for entry in journal if isinstance(entry, tuple) and entry[0] == "ack"] == [
        ("ack", 7, "done", None), ("ack", 8, "done", None), ("ack", 8, "done", None)]


def test_an_input_a_killed_run_wrote_is_posted_as_its_prompt_line_once_acknowledged_again():
    made, journal = commander(done={7, 9})
    emitted = []
    made.driver.emit = emitted.append
    made.handle({"command_id": 7, "kind": "input", "uuid": "u", "content": "ünce"})
    made.handle({"command_id": 9, "kind": "interrupt"})  # only an input has a prompt line
    made.handle({"command_id": 8, "kind": "input", "uuid": "v", "content": "new"})
    made.handle({"command_id": 8, "kind": "input", "uuid": "v", "content": "new"})  # resent
    # the agent's own echo names an input of this run: no line of the runner's for it
    assert [json.loads(text) for text in emitted] == [
        {"type": "turnlog.user", "uuid": "u", "content": "ünce"}]
    assert journal.index(("ack", 7, "done", None)) < journal.index(("send", "v", "new"))


def acks_of(made, journal, count):
    """The acks once `count` came: a held input's goes from a thread of its own."""
    import time
    deadline = time.monotonic() + 5
    while sum(isinstance(e, tuple) and e[0] == "ack" for e in journal) < count:
        assert time.monotonic() < deadline, journal
        time.sleep(0.001)
    return [e for e in journal if isinstance(e, tuple) and e[0] == "ack"]


def test_an_input_the_driver_holds_back_is_recorded_and_acknowledged_when_written():
    """Gemini takes one prompt at a time: a runner killed while an input waits has not
    taken it (no record, no ack), so the server sends it to the resumed run."""
    made, journal = commander()
    made.handle({"command_id": 1, "kind": "input", "uuid": "u1", "content": "later, please"})
    made.handle({"command_id": 1, "kind": "input", "uuid": "u1", "content": "later, please"})
    made.handle({"command_id": 2, "kind": "interrupt"})  # not held up behind it
    assert ("record", 1) not in journal and ("ack", 1, "done", None) not in journal
    assert journal.count(("send", "u1", "later, please")) == 1  # sent again while held: once
    made.driver.on_sent("u1")
    assert acks_of(made, journal, 2) == [("ack", 2, "done", None), ("ack", 1, "done", None)]
    assert journal.index(("record", 1)) < journal.index(("ack", 1, "done", None))
    made.driver.on_sent("u1")  # told twice: nothing more
    assert journal.count(("record", 1)) == 1


def test_a_held_input_the_agent_never_got_is_acknowledged_failed_and_not_recorded():
    made, journal = commander()
    made.handle({"command_id": 4, "kind": "input", "uuid": "u4", "content": "later"})
    made.driver.on_dropped("u4", "the agent was stopped before it was sent")
    assert acks_of(made, journal, 1) == [
        ("ack", 4, "failed", "the agent was stopped before it was sent")]
    assert ("record", 4) not in journal and 4 not in made.done


def test_what_the_agent_cannot_take_is_acknowledged_failed_with_the_reason():
    made, journal = commander(offers=("interrupt", "stop"))
    made.handle({"command_id": 1, "kind": "input", "uuid": "u", "content": "x"})
    made.handle({"command_id": 2, "kind": "teleport"})
    made.handle({"command_id": 3, "kind": "permission"})
    acks = [entry for entry in journal if isinstance(entry, tuple) and entry[0] == "ack"]
    assert [(a[1], a[2]) for a in acks] == [(1, "failed"), (2, "failed"), (3, "failed")]
    assert "does not offer send" in acks[0][3]
    assert "teleport" in acks[1][3]
    assert ("record", 3) in journal  # a failed command is not retried either


def test_stop_closes_stdin_then_signals_until_the_agent_exits_and_later_inputs_fail():
    process = FakeProcess(exits_after_signal=15)
    made, journal = commander(process=process)
    made.handle({"command_id": 1, "kind": "stop", "requested_by": "alice"})
    made.handle({"command_id": 2, "kind": "input", "uuid": "u", "content": "late"})
    tuples = [entry for entry in journal if isinstance(entry, tuple)]
    assert tuples[:4] == [("close_stdin",), ("record", 1), ("ack", 1, "done", None),
                          ("signal", 15)]
    assert ("signal", 9) not in tuples
    assert tuples[-1][:3] == ("ack", 2, "failed")
    assert any("asked by alice" in entry for entry in journal if isinstance(entry, str))


def test_an_agent_that_ignores_sigterm_gets_sigkill():
    made, journal = commander(process=FakeProcess(exits_after_signal=9))
    made.handle({"command_id": 1, "kind": "stop"})
    assert [e for e in journal if isinstance(e, tuple) and e[0] == "signal"] == [
        ("signal", 15), ("signal", 9)]


def test_acks_are_retried_while_the_server_is_busy_and_given_up_on_a_refusal():
    busy = ApiError(503, "busy", "later")
    made, journal = commander(failures=[Unreachable("down"), busy])
    made.handle({"command_id": 1, "kind": "interrupt"})
    assert journal.count(("sleep",)) == 2 and ("ack", 1, "done", None) in journal
    made, journal = commander(failures=[ApiError(403, "forbidden", "no")])
    made.handle({"command_id": 2, "kind": "interrupt"})
    assert not [e for e in journal if isinstance(e, tuple) and e[0] == "ack"]
    assert any("acknowledging command 2" in e for e in journal if isinstance(e, str))


class FakeResponse:
    """A streamed response: `raw.read1` gives `chunks` one by one, then raises `then`."""

    def __init__(self, chunks, then=None):
        self.chunks, self.then, self.closed = list(chunks), then, False
        self.raw = self

    def read1(self, size=-1, decode_content=None):
        if self.chunks:
            return self.chunks.pop(0)
        if self.then is not None:
            raise self.then
        return b""

    def close(self):
        self.closed = True


class FakeStreams:
    """open_stream answers from a script: a FakeResponse, or an exception to raise."""

    def __init__(self, script):
        self.script, self.opened = list(script), []

    def open_stream(self, path, last_event_id=None, read_timeout=None):
        self.opened.append((path, last_event_id))
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class NoWait:
    def next_delay(self, retry_after=None):
        return 0

    def reset(self):
        pass


def event(command_id, kind="interrupt"):
    data = json.dumps({"command_id": command_id, "kind": kind})
    return f"id: {command_id}\nevent: command\ndata: {data}\n\n".encode()


def test_the_channel_resumes_after_the_last_command_it_handled_and_stops_at_a_409():
    streams = FakeStreams([
        FakeResponse([event(1) + b": keep-alive\n\n", event(2)[:10], event(2)[10:]],
                     then=requests.exceptions.ChunkedEncodingError("dropped")),
        Unreachable("down"),
        FakeResponse([event(3), b"event: other\ndata: {}\n\n", b"event: command\ndata: nope\n\n"]),
        ApiError(409, "session_completed", "done"),
    ])
    handled, logged = [], []
    channel = Channel(streams, "S", lambda command: handled.append(command["command_id"]),
                      log=logged.append, backoff=NoWait())
    channel.run()
    assert handled == [1, 2, 3]
    assert [last for _, last in streams.opened] == [None, "2", "2", "3"]
    assert streams.opened[0][0] == "/api/remote/sessions/S/commands"
    assert any("not JSON" in line for line in logged)
    assert any("no more commands" in line for line in logged)


def test_a_stream_urllib3_drops_is_resumed_like_any_other_drop():
    streams = FakeStreams([
        FakeResponse([event(1)], then=urllib3.exceptions.ProtocolError("connection broken")),
        FakeResponse([event(2)]),
        ApiError(409, "session_completed", "done"),
    ])
    handled = []
    Channel(streams, "S", lambda command: handled.append(command["command_id"]),
            log=lambda line: None, backoff=NoWait()).run()
    assert handled == [1, 2] and [last for _, last in streams.opened] == [None, "1", "2"]
