"""The live hub against a fake mark reader: one read per poll for every watched
session, wake-ups only for sessions that moved, and no poller once nobody watches."""
import threading

from app.services.live.hub import LiveHub
from app.services.live.hub import Mark


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


class FakeRows:
    """A session's buffer rows (index, event JSON, live events) and every read made."""

    def __init__(self, buffer):
        self.rows = buffer
        self.reads = []

    def __call__(self, after_by_session, limit):
        self.reads.append(dict(after_by_session))
        return {sid: [row for row in self.rows.get(sid, []) if row[0] > after][:limit]
                for sid, after in after_by_session.items()}


def row(index):
    return (index, f'{{"n":{index}}}', None if index % 2 else f"event {index}")


def hub_with_rows(marks, read_rows, **options):
    return LiveHub(marks, poll_seconds=0.0, start=lambda target: None, read_rows=read_rows,
                   **options)


def test_new_rows_are_read_once_per_poll_and_shared_by_every_caught_up_follower():
    marks = FakeMarks(s1=Mark(3, False))
    rows = FakeRows({"s1": [row(i) for i in range(6)]})
    hub = hub_with_rows(marks, rows)
    watches = [hub.watch("s1") for _ in range(100)]
    for watch in watches:
        watch.wait("s1", 2, 0)
    hub.poll_once()  # first sight: what came before is each follower's own to read
    assert rows.reads == [] and watches[0].shared("s1", 2) is None
    marks.marks["s1"] = Mark(6, False)
    hub.poll_once()
    assert rows.reads == [{"s1": 2}]  # one read for the hundred followers
    pages = {id(watch.shared("s1", 2)) for watch in watches}
    assert len(pages) == 1
    page = watches[0].shared("s1", 2)
    assert (page.first, page.last, page.rows) == (3, 5, [row(3), row(4), row(5)])
    assert watches[0].wait("s1", 5, 0) is False  # caught up: nothing more to wake for


def test_a_follower_inside_a_kept_page_gets_the_rest_and_one_behind_reads_itself():
    marks = FakeMarks(s1=Mark(3, False))
    rows = FakeRows({"s1": [row(i) for i in range(6)]})
    hub = hub_with_rows(marks, rows)
    hub.watch("s1").wait("s1", 2, 0)
    hub.poll_once()
    marks.marks["s1"] = Mark(6, False)
    hub.poll_once()
    marks.marks["s1"] = Mark(9, False)
    rows.rows["s1"] += [row(6), row(7), row(8)]
    hub.poll_once()
    assert [r[0] for r in hub.shared("s1", 2).rows] == [3, 4, 5]
    assert hub.shared("s1", 5).first == 6  # the next kept page
    assert [r[0] for r in hub.shared("s1", 6).rows] == [7, 8]
    assert hub.shared("s1", 1) is None  # before every kept page: its own read
    assert hub.shared("s1", 8) is None  # at the newest row: nothing to take


def test_a_hole_in_the_new_rows_drops_the_kept_pages():
    marks = FakeMarks(s1=Mark(3, False))
    rows = FakeRows({"s1": [row(i) for i in range(6)]})
    hub = hub_with_rows(marks, rows)
    hub.watch("s1").wait("s1", 2, 0)
    hub.poll_once()
    marks.marks["s1"] = Mark(6, False)
    rows.rows["s1"] = [row(3), row(5)]  # retention removed 4 out of order
    hub.poll_once()
    assert hub.shared("s1", 2) is None  # followers read, and reset, for themselves
    marks.marks["s1"] = Mark(7, False)
    rows.rows["s1"].append(row(6))
    hub.poll_once()
    assert hub.shared("s1", 5).rows == [row(6)]  # sharing resumes after the hole


def test_a_failed_row_read_leaves_followers_to_read_for_themselves(caplog):
    marks = FakeMarks(s1=Mark(1, False))

    def failing(after_by_session, limit):
        raise OSError("database unreachable")

    hub = hub_with_rows(marks, failing)
    watch = hub.watch("s1")
    watch.wait("s1", 0, 0)
    hub.poll_once()
    marks.marks["s1"] = Mark(3, False)
    hub.poll_once()
    assert watch.shared("s1", 0) is None
    assert watch.wait("s1", 0, 0) is True  # still woken: the mark moved
    assert "reading the new rows failed" in caplog.text


def test_a_page_makes_each_feed_once():
    marks = FakeMarks(s1=Mark(1, False))
    hub = hub_with_rows(marks, FakeRows({"s1": [row(i) for i in range(4)]}))
    hub.watch("s1").wait("s1", 0, 0)
    hub.poll_once()
    marks.marks["s1"] = Mark(4, False)
    hub.poll_once()
    made = []

    def live_events(page_rows):
        made.append(1)
        return [(index, live) for index, _, live in page_rows if live is not None]

    page = hub.shared("s1", 0)
    assert page.feed(live_events) == [(2, "event 2")]
    assert page.feed(live_events) is page.feed(live_events) and made == [1]


def test_a_listener_runs_beside_the_poller_and_stops_with_it():
    marks = FakeMarks(s1=Mark(0, False))
    listened = []  # (on_notify, stop) of each listener started
    hub, started = make_hub(marks, listen=lambda on_notify, stop: listened.append((on_notify, stop)))
    watch = hub.watch("s1")
    watch.wait("s1", -1, timeout=0)
    assert len(started) == 2  # the poller and the listener
    started[1]()
    (on_notify, stop), = listened
    assert not stop()
    watch.close()
    started[0]()  # the poller sees nobody watching and returns
    assert stop()
    again = hub.watch("s1")
    again.wait("s1", -1, timeout=0)
    started[3]()
    assert stop() and not listened[1][1]()  # a new poller's listener, the old one still stopped
    again.close()


def test_a_notification_kicks_the_poller_only_for_a_followed_session():
    marks = FakeMarks(s1=Mark(0, False))
    hub, _ = make_hub(marks)
    watch = hub.watch("s1")
    watch.wait("s1", -1, timeout=0)
    hub.kick("elsewhere")
    assert not hub._kicked.is_set()
    hub.kick("s1")
    assert hub._kicked.is_set()
    watch.close()
