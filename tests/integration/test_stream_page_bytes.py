"""A replaying follower's page stops at a byte budget as well as at its count (issue
29): on a real database (SQLite steps its cursor and stops; PostgreSQL reads the
sizes first), every row comes once, in order, and no page holds more than its budget
but for a first row bigger than it."""
from app import db
from app.services import streaming
from app.services.streaming import StreamSettings

ROW = 10_000


def replay_pages(sid, settings):
    feed = streaming.Feed(sid, streaming.FROM_START, db.detached_units_of_work(),
                          sleep=lambda s: None)
    records = list(streaming.follow(feed, settings=settings))
    assert isinstance(records[-1], streaming.End)
    return [r.events for r in records if isinstance(r, streaming.Page)]


def test_replay_pages_stop_at_the_byte_budget_and_lose_nothing(new_session, feed, complete):
    sid = new_session()
    feed(sid, [f"{n:03d}" + "x" * ROW for n in range(20)], stream="stderr")
    complete(sid)
    pages = replay_pages(sid, StreamSettings(page_size=1000, page_bytes=3 * ROW + 500,
                                             poll_seconds=0, max_seconds=30))
    indexes = [index for page in pages for index, _ in page]
    assert indexes == list(range(20))
    assert all(sum(len(data) for _, data in page) <= 3 * ROW + 500 for page in pages)
    assert len(pages) >= 7  # 20 rows of ~10 KB, under 3 to a page


def test_a_row_bigger_than_the_budget_comes_alone(app, new_session, feed):
    sid = new_session()
    feed(sid, ["a" * ROW, "b", "c"], stream="stderr")
    with db.detached_units_of_work()() as uow:
        first, cut = uow.outputs.list_after(sid, -1, 1000, 100)
        rest, rest_cut = uow.outputs.list_after(sid, first[-1][0], 1000, 100_000)
        whole, whole_cut = uow.outputs.list_after(sid, -1, 1000)
    assert [i for i, _ in first] == [0] and cut is True
    assert [i for i, _ in rest] == [1, 2] and rest_cut is False
    assert [i for i, _ in whole] == [0, 1, 2] and whole_cut is False
