"""The command channel through a real gunicorn (gunicorn.conf.py's worker, one worker so
that the POST and the waiting stream share a process): a runner holding GET .../commands
open as SSE gets each command posted meanwhile, in order, once; after its ack a
reconnect from the start sends nothing again; the stream ends with the session."""
import time

import pytest

from tests import servers
from tests.servers import call
from tests.sse_client import EventStream

READ_SECONDS = 20


@pytest.fixture
def server(tmp_path):
    with servers.gunicorn(tmp_path, workers=1, env={"TURNLOG_STREAM_HEARTBEAT_SECONDS": "0.5"}) as served:
        yield served


def next_event(stream, deadline):
    while True:
        frame = stream.next_frame(deadline)
        if frame is None or frame.event is not None:
            return frame


def test_a_waiting_runner_gets_each_command_at_once(server):
    status, body = call(server.base, "POST", "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201, body
    base = f"/api/remote/sessions/{body['session']['session_id']}"
    assert call(server.base, "POST", f"{base}/runner", {"controls": ["send", "interrupt", "stop"]})[0] == 200
    stream = EventStream(server.base, f"{base}/commands")
    assert stream.status == 200
    deadline = time.monotonic() + READ_SECONDS
    assert stream.next_frame(deadline).retry is not None
    seconds = []
    for n, (path, payload) in enumerate([("/messages", {"content": "hi", "client_message_id": "a"}),
                                         ("/interrupt", None), ("/stop", None)], start=1):
        posted = time.monotonic()
        assert call(server.base, "POST", f"{base}{path}", payload)[0] == 202
        frame = next_event(stream, deadline)
        seconds.append(time.monotonic() - posted)
        assert (frame.event, frame.id, frame.data["command_id"]) == ("command", str(n), n)
        assert call(server.base, "POST", f"{base}/commands/{n}/ack", {"outcome": "done"})[0] == 200
    assert max(seconds) < 5  # loose: milliseconds (bench/commands.py)
    assert call(server.base, "POST", f"{base}/complete", {"exit_code": 0})[0] == 200
    end = next_event(stream, deadline)
    stream.close()
    assert (end.event, end.data) == ("end", {"status": "completed"})
    again = EventStream(server.base, f"{base}/commands")
    events = []
    while (frame := next_event(again, deadline)) is not None:
        events.append(frame.event)
    again.close()
    assert events == ["end"]  # acknowledged commands are never sent again
