"""Inputs to a live session on a real database: queued once per client_message_id, also
when sends of the same id race, read back with SQL and as the session's pending_inputs."""
import threading

import pytest

from app.core.errors import InputTooLarge
from app.core.errors import SessionClosed
from app.db import writing
from app.extensions import db
from app.services import inputs
from app.services.access import Caller
from app.storage.repositories.control.inputs import InputRepository
from app.storage.unit_of_work import WRITE_OPTION

MAX_BYTES = 100 * 1024
SENDERS = 8
JOIN_TIMEOUT = 60


def send(session_id, content="hello", client_id="c-1", **kwargs):
    return inputs.send_input(session_id, content, client_id, writing(), max_bytes=MAX_BYTES, **kwargs)


def stored(rows, session_id):
    return rows("SELECT client_message_id, content, state, reason, created_by, delivered_at,"
                " applied_at FROM session_inputs WHERE session_id = ? ORDER BY input_id", session_id)


def test_an_input_is_queued_as_one_row(app, new_session, rows):
    sid = new_session()
    alice = Caller("user", "alice", is_admin=True)
    sent = send(sid, "fix the tests", "c-1", caller=alice)
    assert sent.created
    assert sent.input.state == "queued"
    assert stored(rows, sid) == [("c-1", "fix the tests", "queued", None, "alice", None, None)]


def test_the_same_client_id_again_writes_nothing_and_returns_the_first(app, new_session, rows):
    sid = new_session()
    first = send(sid, "one", "c-1")
    again = send(sid, "one, edited", "c-1")
    assert not again.created
    assert again.input == first.input
    assert [row[:2] for row in stored(rows, sid)] == [("c-1", "one")]


def test_client_ids_are_per_session(app, new_session, rows):
    one, two = new_session(), new_session()
    assert send(one, client_id="c-1").created
    assert send(two, client_id="c-1").created
    assert rows("SELECT COUNT(*) FROM session_inputs WHERE client_message_id = ?", "c-1") == [(2,)]


def test_concurrent_sends_of_one_client_id_make_one_row(app, new_session, rows):
    sid = new_session()
    barrier = threading.Barrier(SENDERS)
    results, failures = [], []

    def sender(n):
        with app.app_context():
            try:
                barrier.wait()
                results.append(send(sid, f"from {n}", "same"))
            except Exception as err:  # noqa: BLE001 - reported below, with the others
                failures.append(err)

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert failures == []
    assert len(results) == SENDERS
    assert sum(result.created for result in results) == 1
    assert len({result.input.input_id for result in results}) == 1
    assert rows("SELECT COUNT(*) FROM session_inputs WHERE session_id = ?", sid) == [(1,)]


def test_an_insert_racing_an_uncommitted_one_resolves_to_the_winner(app, new_session, rows):
    """Two connections: the second writer waits for the first to commit (PostgreSQL: its
    insert waits on the unique key; SQLite: its BEGIN IMMEDIATE on the write lock), then
    inserts nothing and reads the row that won, in the same transaction."""
    sid = new_session()
    outcome = {}
    with app.app_context():
        # writers, as units of work make them (SQLite: BEGIN IMMEDIATE, which waits)
        first = db.engine.connect().execution_options(**{WRITE_OPTION: True})
        second = db.engine.connect().execution_options(**{WRITE_OPTION: True})
    try:
        first.begin()
        won = InputRepository(first).add_if_new(sid, "race", "first", "alice", "2026-01-01T00:00:00Z")
        assert won is not None

        def late():
            second.begin()
            repo = InputRepository(second)
            outcome["added"] = repo.add_if_new(sid, "race", "second", "bob", "2026-01-01T00:00:01Z")
            outcome["found"] = repo.find(sid, "race")
            second.commit()

        thread = threading.Thread(target=late)
        thread.start()
        thread.join(0.2)  # it waits on the first transaction (a loose bound: it may not have begun)
        first.commit()
        thread.join(JOIN_TIMEOUT)
        assert not thread.is_alive()
    finally:
        first.close()
        second.close()
    assert outcome["added"] is None
    assert outcome["found"] == won
    assert stored(rows, sid) == [("race", "first", "queued", None, "alice", None, None)]


def test_pending_inputs_are_listed_oldest_first_until_applied(app, new_session, read_session, rows):
    sid = new_session()
    for n in range(3):
        send(sid, f"prompt {n}", f"c-{n}")
    rows("UPDATE session_inputs SET state = 'applied' WHERE client_message_id = ?", "c-0")
    rows("UPDATE session_inputs SET state = 'failed', reason = 'runner gone'"
         " WHERE client_message_id = ?", "c-2")
    pending = read_session(sid).pending_inputs
    assert [(i.client_message_id, i.state, i.reason) for i in pending] == [
        ("c-1", "queued", None), ("c-2", "failed", "runner gone")]


def test_a_completed_session_refuses_new_inputs_but_answers_a_repeat(app, new_session, complete,
                                                                      rows):
    sid = new_session()
    first = send(sid, client_id="before")
    complete(sid)
    with pytest.raises(SessionClosed):
        send(sid, client_id="after")
    assert send(sid, client_id="before").input == first.input
    assert [row[0] for row in stored(rows, sid)] == ["before"]


def test_content_over_the_limit_is_refused_whole(app, new_session, rows):
    sid = new_session()
    with pytest.raises(InputTooLarge) as refused:
        inputs.send_input(sid, "é" * 6, "big", writing(), max_bytes=11)  # 12 bytes of UTF-8
    assert refused.value.details == {"bytes": 12, "limit": 11}
    assert inputs.send_input(sid, "é" * 5 + "x", "fits", writing(), max_bytes=11).created
    assert [row[0] for row in stored(rows, sid)] == ["fits"]
