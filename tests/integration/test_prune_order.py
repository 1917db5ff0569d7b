"""Pruning walks each session's buffer in event order: expired prefixes go, across
sessions and within the batch limit, and a row is never deleted before it expires."""
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.records import Chunk
from app.db import detached_units_of_work
from app.services import streaming
from app.services.ingest import ingest_output


def buffer(rows, sid):
    return [r[0] for r in rows("SELECT event_index FROM remote_runtime_outputs"
                               " WHERE session_id = ? ORDER BY event_index", sid)]


def store(new_uow, sid, count, retention, start=0):
    chunks = [Chunk(f"line {start + n}", "stdout", start + n) for n in range(count)]
    ingest_output(sid, chunks, new_uow(write=True), retention_seconds=retention)


def test_prune_takes_each_sessions_expired_prefix_in_limited_batches(new_session, rows):
    new_uow = detached_units_of_work()
    a, b, live = new_session(), new_session(), new_session()
    store(new_uow, a, 7, -1)
    store(new_uow, a, 3, 3600, start=7)
    store(new_uow, b, 5, -1)
    store(new_uow, live, 4, 3600)

    with new_uow(write=True) as uow:
        first = uow.outputs.delete_expired(to_iso(utc_now()), 4)
        uow.commit()
    total = first + streaming.prune_outputs(new_uow, batch_size=4)

    assert first == 4  # the limit holds across sessions
    assert total == 12
    assert buffer(rows, a) == [7, 8, 9]
    assert buffer(rows, b) == []
    assert buffer(rows, live) == [0, 1, 2, 3]


def test_a_row_kept_longer_holds_back_later_rows_instead_of_going_early(new_session, rows):
    # The retention was shortened between two requests: the newer rows expired first.
    new_uow = detached_units_of_work()
    sid = new_session()
    store(new_uow, sid, 2, 3600)
    store(new_uow, sid, 2, -1, start=2)

    assert streaming.prune_outputs(new_uow, batch_size=10) == 0
    assert buffer(rows, sid) == [0, 1, 2, 3]
