"""A commit wakes the followers of its own process at once: with the poll set to 30 s,
a line posted (and a completion) still reaches a follower of the same app in moments."""
import queue
import threading
import time

import pytest

from tests.api import complete
from tests.api import create_session
from tests.api import post_lines

POLL = 30.0  # far longer than any wait below: only the wake-up can deliver in time
PROMPT = 3.0


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "STREAM_POLL_SECONDS": POLL, "STREAM_HEARTBEAT_SECONDS": 60}


def read_frames(app, sid, into):
    response = app.test_client().get(f"/api/remote/sessions/{sid}/stream", buffered=False)
    try:
        for frame in response.response:
            into.put(frame)
    finally:
        response.close()
        into.put(None)


def wait_for(frames, needle):
    seen, deadline = b"", time.monotonic() + PROMPT
    while needle not in seen:
        frame = frames.get(timeout=max(0.01, deadline - time.monotonic()))
        assert frame is not None, seen
        seen += frame
    return time.monotonic()


def test_ingest_and_completion_wake_this_process_s_followers(app, client):
    sid = create_session(client)
    post_lines(client, sid, ["first line"])
    frames = queue.Queue()
    reader = threading.Thread(target=read_frames, args=(app, sid, frames), daemon=True)
    reader.start()
    wait_for(frames, b"first line")  # read by the stream itself: it is caught up now
    time.sleep(0.2)  # and waits on the hub
    posted = time.monotonic()
    assert post_lines(client, sid, ["second line"], start_seq=1).status_code == 200
    assert wait_for(frames, b"second line") - posted < PROMPT
    assert complete(client, sid).status_code == 200
    wait_for(frames, b"event: end")
    reader.join(PROMPT)
    assert not reader.is_alive()
