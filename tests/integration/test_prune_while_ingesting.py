"""Pruning the buffer while runners keep writing: expired rows go, nothing else does."""
import threading

from app.core.records import Chunk
from app.db import detached_units_of_work
from app.services import streaming
from app.services.ingest import ingest_output
from tests import claude_lines as cl

OLD, NEW, BATCH = 400, 1500, 20


def test_prune_runs_alongside_ingest_without_losing_live_rows(app, new_session, rows):
    new_uow = detached_units_of_work()
    sid = new_session("ordinary")
    old = [Chunk(f"old {n}", "stdout", n) for n in range(OLD)]
    ingest_output(sid, old, new_uow(write=True), retention_seconds=-1)  # expired at birth
    errors, done, pruned = [], threading.Event(), []
    pruned_once_more = threading.Event()  # interleaves the two threads batch by batch

    def produce():
        try:
            for start in range(OLD, OLD + NEW, BATCH):
                pruned_once_more.wait(timeout=5)
                pruned_once_more.clear()
                lines = [cl.assistant(cl.text(f"new {n}")) for n in range(start, start + BATCH - 1)]
                lines.append(cl.result())
                chunks = [Chunk(line, "stdout", start + i) for i, line in enumerate(lines)]
                ingest_output(sid, chunks, new_uow(write=True), retention_seconds=3600)
        except Exception as err:  # reported below, with the thread's failure
            errors.append(err)
        finally:
            done.set()

    def prune():
        try:
            while not done.is_set():
                pruned.append(streaming.prune_outputs(new_uow, batch_size=25))
                pruned_once_more.set()
        except Exception as err:
            errors.append(err)

    threads = [threading.Thread(target=produce), threading.Thread(target=prune)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    pruned.append(streaming.prune_outputs(new_uow, batch_size=25))

    assert errors == []
    assert len(pruned) > NEW // BATCH  # pruning ran between the producer's batches
    assert sum(pruned) == OLD
    kept = [r[0] for r in rows("SELECT event_index FROM remote_runtime_outputs "
                               "WHERE session_id = ? ORDER BY event_index", sid)]
    assert kept == list(range(OLD, OLD + NEW))
    turns = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?", sid)[0][0]
    assert turns == NEW // BATCH
