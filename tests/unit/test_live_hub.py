"""The live hub against a fake mark reader: one read per poll for every watched
session, wake-ups only for sessions that moved, and no poller once nobody watches."""
import threading

from app.services.live_hub import LiveHub
from app.services.live_hub import Mark


class FakeMarks:
    """Where each session stands, and every read the hub made."""

    def __init__(self, **marks):
        self.marks = dict(marks)
        self.reads = []

    def __call__(self, session_ids):
        self.reads.append(sorted(session_ids))
        return {sid: self.marks[sid] for sid in session_ids if sid in self.marks}


def make_hub(marks, **options):
    started = []
    hub = LiveHub(marks, poll_seconds=0.0, start=started.append, **options)
    return hub, started


def test_one_read_serves_every_follower_of_every_watched_session():
    marks = FakeMarks(s1=Mark(3, False), s2=Mark(0, False))
    hub, started = make_hub(marks)
    watches = [hub.watch("s1") for _ in range(500)] + [hub.watch("s2") for _ in range(500)]
    for watch in watches:
        watch.wait(watch._session_id, 99, 0)  # registers; times out at once
    assert len(started) == 1  # one poller, however many followers
    hub.poll_once()
    assert marks.reads == [["s1", "s2"]]
    assert hub.followers() == 1000


def test_a_follower_behind_the_mark_returns_at_once_and_one_at_it_times_out():
    hub, _ = make_hub(FakeMarks(s1=Mark(5, False)))
    watch = hub.watch("s1")
    assert watch.wait("s1", 10, 0) is False  # not read yet: nothing known
    hub.poll_once()
    assert watch.wait("s1", 3, 0) is True  # events 4 and 5 follow cursor 3
    assert watch.wait("s1", 4, 0) is False  # nothing after the last event (4)


def test_a_completed_or_vanished_session_wakes_its_followers():
    marks = FakeMarks(s1=Mark(1, False), s2=Mark(1, False))
    hub, _ = make_hub(marks)
    first, second = hub.watch("s1"), hub.watch("s2")
    first.wait("s1", 0, 0)
    second.wait("s2", 0, 0)
    marks.marks["s1"] = Mark(1, True)
    del marks.marks["s2"]
    hub.poll_once()
    assert first.wait("s1", 0, 0) is True
    assert second.wait("s2", 0, 0) is True


def test_a_waiting_follower_is_woken_by_the_poll_that_sees_new_events():
    marks = FakeMarks(s1=Mark(1, False))
    hub, _ = make_hub(marks)
    hub.watch("s0").wait("s0", 0, 0)  # some other session keeps the hub busy
    watch = hub.watch("s1")
    watch.wait("s1", 0, 0)
    hub.poll_once()
    results = []
    waiter = threading.Thread(target=lambda: results.append(watch.wait("s1", 0, 60)))
    waiter.start()
    while not hub._watched["s1"][1]._waiters:  # until it really waits
        threading.Event().wait(0.001)
    marks.marks["s1"] = Mark(2, False)
    hub.poll_once()
    waiter.join(10)
    assert results == [True]


def test_the_poller_stops_when_the_last_follower_leaves_and_restarts_for_the_next():
    marks = FakeMarks(s1=Mark(0, False))
    hub, started = make_hub(marks)
    watches = [hub.watch("s1"), hub.watch("s1")]
    for watch in watches:
        watch.wait("s1", 0, 0)
    polled = []

    def read_then_leave(session_ids):
        polled.append(session_ids)
        if len(polled) == 2:
            for watch in watches:
                watch.close()
        return marks(session_ids)

    hub._read_marks = read_then_leave
    hub.run_poller()  # returns by itself: nobody watches after the second read
    assert len(polled) == 2 and hub.followers() == 0
    assert hub.poll_once() is None and len(polled) == 2  # nothing watched, nothing read
    hub.watch("s1").wait("s1", 0, 0)
    assert len(started) == 2  # a new follower brings a new poller


def test_a_failing_read_is_logged_and_the_poller_goes_on(caplog):
    hub, _ = make_hub(None)
    watch = hub.watch("s1")
    watch.wait("s1", 0, 0)
    calls = []

    def flaky(session_ids):
        calls.append(1)
        if len(calls) == 1:
            raise OSError("database unreachable")
        watch.close()
        return {}

    hub._read_marks = flaky
    hub.run_poller()
    assert len(calls) == 2
    assert "reading the session marks failed" in caplog.text


def test_closing_twice_or_without_waiting_is_harmless():
    hub, started = make_hub(FakeMarks())
    hub.watch("s1").close()  # never waited: never registered
    watch = hub.watch("s1")
    watch.wait("s1", 0, 0)
    watch.close()
    watch.close()
    assert hub.followers("s1") == 0 and len(started) == 1
