"""streaming.follow against fakes: replay, live tail, heartbeats, reset, end."""
import json

import pytest

from app.core.errors import SessionNotFound
from app.core.records import Chunk
from app.core.records import TokenRecord
from app.services import ingest
from app.services import streaming
from app.services.access import OPEN
from app.services.access import Caller
from app.services.live import events as live_stream
from app.services.live.hub import LivePage
from app.services.streaming import End
from app.services.streaming import Heartbeat
from app.services.streaming import Page
from app.services.streaming import Reset
from app.services.streaming import StreamSettings
from tests.fakes import FakeUnitOfWork


class FakeTime:
    """A clock that only moves when the stream sleeps; each sleep may run a callback."""

    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep = on_sleep

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.sleeps += 1
        if self.on_sleep:
            self.on_sleep(self.sleeps)


@pytest.fixture
def uow():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", "t0")
    return uow


def send(uow, *lines, start=None):
    first = uow.sessions.rows["s1"].next_event_index if start is None else start
    chunks = [Chunk(line, "stdout", first + i) for i, line in enumerate(lines)]
    ingest.ingest_output("s1", chunks, uow, retention_seconds=60)


def outputs(records):
    """The buffered events of every Page, flattened."""
    return [row for r in records if isinstance(r, Page) for row in r.events]


def run(uow, cursor=-1, fake=None, caller=OPEN, **settings):
    fake = fake or FakeTime()
    options = {"poll_seconds": 1.0, "heartbeat_seconds": 3.0, "max_seconds": 10.0, **settings}
    return list(streaming.follow(streaming.Feed("s1", cursor, uow, sleep=fake.sleep),
                                 settings=StreamSettings(**options), caller=caller,
                                 monotonic=fake.monotonic))


def test_completed_session_replays_in_pages_then_ends(uow):
    send(uow, *[f"line {n}" for n in range(7)])
    ingest.complete_session("s1", 0, uow)
    records = run(uow, page_size=3)
    assert [r[0] for r in outputs(records)] == list(range(7))
    assert [len(r.events) for r in records if isinstance(r, Page)] == [3, 3, 1]
    assert records[-1] == End("completed", 0, 6)


def test_full_pages_in_a_row_read_only_the_buffer(uow):
    send(uow, *[f"line {n}" for n in range(9)])
    ingest.complete_session("s1", 0, uow)
    looked_up = []
    get_session = uow.sessions.get
    uow.sessions.get = lambda sid: looked_up.append(sid) or get_session(sid)
    records = run(uow, page_size=3)
    assert [len(r.events) for r in records if isinstance(r, Page)] == [3, 3, 3]
    assert records[-1] == End("completed", 0, 8)
    assert looked_up == ["s1"]  # only the short (empty) page asks how the session stands


def test_a_full_page_after_a_gap_still_brings_the_reset_first(uow):
    send(uow, *[f"line {n}" for n in range(6)])
    ingest.complete_session("s1", 0, uow)
    uow.outputs.forget_before("s1", 2)
    records = run(uow, cursor=-1, page_size=2)  # the first read is a full page: 2, 3
    assert records[0] == Reset(-1, 2)
    assert [r[0] for r in outputs(records)] == [2, 3, 4, 5]


def test_lines_committed_between_the_two_reads_still_come_before_the_end(uow):
    # PostgreSQL reads each statement at its own snapshot: the events read can miss
    # lines that the completion, committed a moment later, already counts.
    send(uow, "a")
    list_after = uow.outputs.list_after
    reads = []

    def racing_list_after(*args):
        rows = list_after(*args)
        reads.append(len(rows))
        if len(reads) == 2:  # the first idle poll: lines and completion land now
            send(uow, "b", "c")
            ingest.complete_session("s1", 0, uow)
        return rows

    uow.outputs.list_after = racing_list_after
    records = run(uow)
    assert [r[0] for r in outputs(records)] == [0, 1, 2]
    assert records[-1] == End("completed", 0, 2)


def test_a_hole_at_the_end_of_the_buffer_does_not_keep_the_stream_open(uow):
    send(uow, *[f"line {n}" for n in range(6)])
    ingest.complete_session("s1", 0, uow)
    uow.outputs.rows = [(sid, row) for sid, row in uow.outputs.rows if row.event_index < 4]
    list_after = uow.outputs.list_after
    reads = []

    def counted(*args):
        reads.append(args)
        assert len(reads) < 10, "the stream keeps reading a buffer that will not fill"
        return list_after(*args)

    uow.outputs.list_after = counted
    records = run(uow)
    assert [r[0] for r in outputs(records)] == [0, 1, 2, 3]
    assert records[-1] == End("completed", 0, 5)


def test_live_lines_arrive_in_order_and_idle_time_brings_heartbeats(uow):
    send(uow, "a")

    def producer(sleeps):
        if sleeps == 1:
            send(uow, "b", "c")
        if sleeps == 5:
            ingest.complete_session("s1", 0, uow)

    records = run(uow, fake=FakeTime(producer))
    kinds = [type(r).__name__ for r in records]
    assert [json.loads(r[1])["payload"] for r in outputs(records)] == ["a", "b", "c"]
    # each page goes out as soon as it is read, before the stream waits again
    assert [type(r).__name__ for r in records][:2] == ["Page", "Page"]
    assert kinds.count("Heartbeat") == 1  # 3 idle seconds after "c", then the end
    assert kinds[-1] == "End" and kinds.count("End") == 1


def test_stream_stops_after_max_seconds_without_an_end(uow):
    records = run(uow, max_seconds=5.0, heartbeat_seconds=100.0)
    assert records == []


def test_cursor_behind_the_retained_buffer_gets_a_reset_then_the_rest(uow):
    send(uow, "0", "1", "2", "3")
    ingest.complete_session("s1", 0, uow)
    uow.outputs.forget_before("s1", 2)
    records = run(uow, cursor=0)
    assert records[0] == Reset(0, 2)
    assert [r[0] for r in outputs(records)] == [2, 3]


def test_everything_expired_still_resets_then_ends(uow):
    send(uow, "0", "1")
    ingest.complete_session("s1", 0, uow)
    uow.outputs.forget_before("s1", 99)
    assert run(uow) == [Reset(-1, 2), End("completed", 0, 1)]


def test_client_cursor_is_recorded_before_the_page_is_handed_on(uow):
    send(uow, "0", "1", "2")
    records = streaming.follow(streaming.Feed("s1", -1, uow, client_id="tab", sleep=lambda s: None))
    page = next(records)
    assert isinstance(page, Page) and len(page.events) == 3
    # the client may read the page and reconnect before the generator resumes
    assert streaming.resume_cursor("s1", uow, client_id="tab") == 2
    records.close()  # the write failed: the page still counts as delivered
    assert uow.stream_cursors.last_delivered("s1", "tab") == 2


def test_client_cursor_is_recorded_and_used_to_resume(uow):
    send(uow, "0", "1", "2")
    ingest.complete_session("s1", 0, uow)
    list(streaming.follow(streaming.Feed("s1", 0, uow, client_id="tab", sleep=lambda s: None)))
    assert uow.stream_cursors.last_delivered("s1", "tab") == 2
    assert streaming.resume_cursor("s1", uow, client_id="tab") == 2
    assert streaming.resume_cursor("s1", uow, after=1, client_id="tab") == 1
    assert streaming.resume_cursor("s1", uow) == streaming.FROM_START


def test_resume_cursor_of_an_unknown_session_raises(uow):
    with pytest.raises(SessionNotFound):
        streaming.resume_cursor("nope", uow)


def test_heartbeat_is_not_sent_while_events_flow(uow):
    def producer(sleeps):
        if sleeps < 8:
            send(uow, f"line {sleeps}")
        else:
            ingest.complete_session("s1", 0, uow)

    records = run(uow, fake=FakeTime(producer), heartbeat_seconds=2.0, max_seconds=50.0)
    assert not any(isinstance(r, Heartbeat) for r in records)
    assert len(outputs(records)) == 7


def test_a_revoked_token_ends_the_stream_within_an_auth_check(uow):
    uow.tokens.rows[7] = TokenRecord(7, "user", "alice", False, "t0", None)
    alice = Caller("user", "alice", token_id=7)
    send(uow, "a")
    fake = FakeTime(lambda sleeps: sleeps == 2 and uow.tokens.revoke(7, "t1"))
    records = run(uow, fake=fake, caller=alice, max_seconds=100.0, heartbeat_seconds=15.0,
                  auth_check_seconds=3.0)
    assert [r[0] for r in outputs(records)] == [0]
    assert not any(isinstance(r, End) for r in records)
    assert fake.now <= 2 + 3.0  # revoked after 2 s, noticed within one check (3 s), not a heartbeat


def test_a_live_token_keeps_its_stream(uow):
    uow.tokens.rows[7] = TokenRecord(7, "user", "alice", False, "t0", None)
    send(uow, "a")
    fake = FakeTime(lambda sleeps: sleeps == 8 and ingest.complete_session("s1", 0, uow))
    records = run(uow, fake=fake, caller=Caller("user", "alice", token_id=7), max_seconds=100.0)
    assert records[-1] == End("completed", 0, 0)


def test_with_a_wait_seam_the_stream_waits_until_its_next_heartbeat_instead_of_polling(uow):
    fake = FakeTime()
    waits = []

    def wait(session_id, cursor, timeout):
        waits.append((session_id, cursor, timeout))
        fake.now += timeout
        if len(waits) == 2:
            send(uow, "a")
            ingest.complete_session("s1", 0, uow)
        return len(waits) == 2

    records = list(streaming.follow(streaming.Feed("s1", -1, uow, sleep=fake.sleep, wait=wait),
                                    monotonic=fake.monotonic,
                                    settings=StreamSettings(heartbeat_seconds=3.0)))
    assert fake.sleeps == 0  # no poll interval: the hub wakes it
    assert waits == [("s1", -1, 3.0), ("s1", -1, 3.0)]
    assert [type(r).__name__ for r in records] == ["Heartbeat", "Page", "End"]


def test_a_wake_up_that_finds_nothing_is_followed_by_one_poll_interval_not_a_spin(uow):
    fake = FakeTime()
    waits = []

    def always_awake(session_id, cursor, timeout):
        waits.append(cursor)
        if len(waits) == 3:
            ingest.complete_session("s1", 0, uow)
        return True  # e.g. the mark is ahead of rows retention removed

    list(streaming.follow(streaming.Feed("s1", -1, uow, sleep=fake.sleep, wait=always_awake),
                          monotonic=fake.monotonic, settings=StreamSettings(poll_seconds=1.0)))
    assert len(waits) == 3 and fake.sleeps == 2  # wait, sleep, wait, sleep, wait


def test_a_caught_up_follower_takes_the_hubs_page_and_every_such_follower_the_same_one(uow):
    send(uow, "a", "b", "c", "d")
    hub_page = LivePage(2, 3, [(2, '{"n":2}', None), (3, '{"n":3}', None)])
    reads = []
    list_after = uow.outputs.list_after
    uow.outputs.list_after = lambda *args: reads.append(args) or list_after(*args)
    fake = FakeTime()

    def shared(session_id, cursor):
        return hub_page if cursor == 1 else None

    def wait(session_id, cursor, timeout):
        fake.now += timeout
        ingest.complete_session("s1", 0, uow)
        return True

    def follower():
        return streaming.follow(streaming.Feed("s1", 1, uow, sleep=fake.sleep, wait=wait,
                                               shared=shared), monotonic=fake.monotonic)

    first, second = next(follower()), next(follower())
    assert first is second  # one Page (and so one framing) for both
    assert first.events == [(2, '{"n":2}'), (3, '{"n":3}')] and reads == []
    records = list(follower())
    assert [type(r).__name__ for r in records] == ["Page", "End"]  # the end read here
    assert reads == [("s1", 3, 5000, 4 * 1024 * 1024)]


def test_a_follower_off_the_hubs_pages_reads_for_itself(uow):
    send(uow, "a", "b", "c")
    fake = FakeTime()

    def wait(session_id, cursor, timeout):
        fake.now += timeout
        ingest.complete_session("s1", 0, uow)
        return True

    records = list(streaming.follow(streaming.Feed("s1", 0, uow, sleep=fake.sleep, wait=wait,
                                                   shared=lambda session_id, cursor: None),
                                    monotonic=fake.monotonic))
    assert [index for index, _ in outputs(records)] == [1, 2]
    assert isinstance(records[-1], End)


def test_live_events_followers_share_one_events_record_and_skip_lines_without_events(uow):
    hub_page = LivePage(2, 4, [(2, "{}", None), (3, "{}", 'usage {"n":1}'), (4, "{}", None)])
    fake = FakeTime()
    waited = []

    def wait(session_id, cursor, timeout):
        waited.append(cursor)
        fake.now += timeout
        ingest.complete_session("s1", 0, uow)
        return True

    def follower():
        return streaming.follow(live_stream.EventFeed(
            "s1", live_stream.EventCursor(1), uow, sleep=fake.sleep,
            wait=wait, shared=lambda session_id, cursor: hub_page if cursor == 1 else None),
            monotonic=fake.monotonic)

    first = next(follower())
    records = list(follower())
    assert records[0] is first  # one Events record (and one framing) for every follower
    assert first.events == [("3.0", "usage", '{"n":1}')]
    assert waited == [4]  # past line 4 too, which has no events
    assert isinstance(records[-1], live_stream.EventsEnd)
