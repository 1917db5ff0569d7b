"""app.client.feed against a fake server: resume with Last-Event-ID, nothing twice, and the
fallback to /stream where a server has no /events."""
import pytest
import urllib3

from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.feed import follow


class FakeRaw:
    """The body as urllib3 hands it over: a piece per read1, then b"" (or a reset)."""

    def __init__(self, chunks, drop):
        self.chunks = list(chunks)
        self.drop = drop

    def read1(self, size=-1, decode_content=True):
        if self.chunks:
            return self.chunks.pop(0)
        if self.drop:
            raise urllib3.exceptions.ProtocolError("connection reset")
        return b""


class FakeResponse:
    def __init__(self, chunks, drop=False):
        self.raw = FakeRaw(chunks, drop)
        self.closed = False

    def close(self):
        self.closed = True


class FakeClient:
    """Answers each open_stream with the next scripted outcome; records what was asked."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.asked = []

    def open_stream(self, path, last_event_id=None, read_timeout=None):
        self.asked.append((path.rsplit("/", 1)[1], last_event_id))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def frame(event_id, name="block.delta", data="{}"):
    return f"id: {event_id}\nevent: {name}\ndata: {data}\n\n".encode()


def test_a_dropped_stream_resumes_after_the_last_id_and_repeats_nothing():
    first = FakeResponse([frame("1.0"), frame("1.1")[:9], frame("1.1")[9:] + frame("2.0")[:5]],
                         drop=True)
    # The second connection starts one event early (as a buggy proxy might); it is skipped.
    second = FakeResponse([frame("1.1"), frame("2.0"), frame("3.0", "end")])
    client = FakeClient([first, Unreachable("refused"), second])
    events = list(follow(client, "s", sleep=lambda seconds: None))
    assert [e.id for e in events] == ["1.0", "1.1", "2.0", "3.0"]
    assert client.asked == [("events", None), ("events", "1.1"), ("events", "1.1")]
    assert first.closed and second.closed


def test_a_server_without_events_is_followed_on_stream_and_after_is_the_first_cursor():
    client = FakeClient([ApiError(404, "not_found", "no such route"),
                         FakeResponse([frame("8", "output"), frame("9", "end")])])
    events = list(follow(client, "s", after=7, sleep=lambda seconds: None))
    assert [e.event for e in events] == ["output", "end"]
    assert client.asked == [("events", "7"), ("stream", "7")]


def test_no_api_at_the_url_is_raised_after_stream_says_so_too():
    # a --server with a path on a turnlog server: /events and /stream both name no route
    wrong = Misconfigured("no turnlog API at http://h/turnlog: give the server's root URL", 404)
    client = FakeClient([wrong, wrong])
    with pytest.raises(Misconfigured):
        list(follow(client, "s", sleep=lambda seconds: None))
    assert client.asked == [("events", None), ("stream", None)]


def test_an_unknown_session_or_a_refused_token_is_raised_not_retried():
    for error in (ApiError(404, "session_not_found", "no"), ApiError(401, "invalid_token", "no")):
        client = FakeClient([error])
        try:
            list(follow(client, "s", sleep=lambda seconds: None))
        except ApiError as raised:
            assert raised is error
        else:
            raise AssertionError("not raised")
        assert len(client.asked) == 1


def test_busy_answers_wait_retry_after_then_go_on():
    waits = []
    client = FakeClient([ApiError(429, "too_many_streams", "later", retry_after=15.0),
                         FakeResponse([frame("0", "end")])])
    assert [e.event for e in follow(client, "s", raw=True, sleep=waits.append)] == ["end"]
    assert waits[0] >= 15.0
