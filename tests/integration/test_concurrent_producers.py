"""Producer processes share one session: event_index stays gap-free, unique and lossless.

Each producer is its own spawned interpreter with its own app and engine on the
same database (a SQLite file, or a PostgreSQL schema), as gunicorn workers would be.
They build their apps, meet at a barrier, and then ingest at once; the rows are read
back on a connection of the test's own.
"""
import json
import multiprocessing
import queue
import threading
import time
import traceback

from app import create_app
from app.core.records import Chunk
from app.db import writing
from app.services.ingest import ingest_output
from tests import claude_lines as cl

PRODUCERS = 8
CHUNKS = 1000  # per producer (per seq range)
BATCH = 25  # one ingest call; its last line is a `result`, so one batch is one turn
RESEND_SHIFT = BATCH // 2  # re-senders cut the same range half a batch earlier
SEQ_STRIDE = 10000  # producer p owns seqs p * SEQ_STRIDE + i
RETENTION_SECONDS = 3600
START_TIMEOUT = 60  # for every child to import, build its app and reach the barrier
RUN_TIMEOUT = 90  # for every report once the barrier opens
JOIN_TIMEOUT = 15


def seq_of(owner, i):
    return owner * SEQ_STRIDE + i


def line_of(owner, i):
    """The stdout line for chunk i of `owner`'s range: it names (owner, i) either way."""
    if i % BATCH == BATCH - 1:
        return cl.result(text_result=f"p{owner} i{i}", uuid=f"r-{owner}-{i}")
    if i % BATCH == BATCH // 2:
        return f"plain p{owner} i{i}"
    return cl.assistant(cl.text(f"p{owner} i{i}"), uuid=f"a-{owner}-{i}")


def batches(shift):
    """[(first, stop)] over one range; `shift` > 0 moves the cuts so batches half-overlap."""
    cuts = [0, *range(BATCH - shift, CHUNKS, BATCH), CHUNKS] if shift else [
        *range(0, CHUNKS, BATCH), CHUNKS]
    return list(zip(cuts, cuts[1:]))


def produce(slot, database_url, session_id, owner, shift, barrier, pair, reports):
    """Child process: ingest `owner`'s whole range in batches; put one report, always.

    With a `pair` barrier the two senders of one range meet before each of the
    original's batches, so every round races on the same seqs.
    """
    report = {"slot": slot, "owner": owner, "receipts": [], "error": None}
    try:
        app = create_app({"SQLALCHEMY_DATABASE_URI": database_url})
        with app.app_context():
            barrier.wait(START_TIMEOUT)
            for round_, (first, stop) in enumerate(batches(shift)):
                if pair is not None and round_ < CHUNKS // BATCH:
                    pair.wait(RUN_TIMEOUT)
                chunks = [Chunk(line_of(owner, i), "stdout", seq_of(owner, i))
                          for i in range(first, stop)]
                receipt = ingest_output(session_id, chunks, writing(),
                                        retention_seconds=RETENTION_SECONDS)
                report["receipts"].append((first, stop - first, receipt.accepted,
                                           receipt.duplicates, receipt.last_event_index))
    except BaseException:  # noqa: B036 - the parent must hear about anything
        report["error"] = traceback.format_exc()
        barrier.abort()
        if pair is not None:
            pair.abort()
    reports.put(report)


def run_producers(database_url, session_id, plan):
    """Start one process per (owner, shift, pair) in `plan`, release them together, collect.

    Returns (reports in slot order, seconds from the barrier to the last report,
    exit codes). Stragglers are killed, so a hang fails the test instead of pytest.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(plan) + 1)
    reports = ctx.Queue()
    pairs = {key: ctx.Barrier(2) for _, _, key in plan if key is not None}
    procs = [
        ctx.Process(target=produce, daemon=True,
                    args=(slot, database_url, session_id, owner, shift, barrier,
                          pairs.get(key), reports))
        for slot, (owner, shift, key) in enumerate(plan)
    ]
    for proc in procs:
        proc.start()
    collected = {}
    try:
        try:
            barrier.wait(START_TIMEOUT)
        except threading.BrokenBarrierError:
            pass  # a child failed or timed out; its report says why
        started = time.monotonic()
        deadline = started + RUN_TIMEOUT
        while len(collected) < len(procs):
            try:
                report = reports.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            collected[report["slot"]] = report
        elapsed = time.monotonic() - started
        for proc in procs:
            proc.join(max(0.1, deadline + JOIN_TIMEOUT - time.monotonic()))
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        reports.close()
    return [collected.get(slot) for slot in range(len(procs))], elapsed, [p.exitcode for p in procs]


def assert_all_finished(reports, exit_codes):
    errors = [r["error"] for r in reports if r is not None and r["error"]]
    assert errors == [], "\n".join(errors)
    assert None not in reports, f"missing reports; exit codes {exit_codes}"
    assert exit_codes == [0] * len(reports)


def stored(rows, session_id):
    """(event_index, producer_seq, stream, payload) in event order, and next_event_index."""
    found = rows("SELECT event_index, producer_seq, stream, payload FROM remote_runtime_outputs"
                 " WHERE session_id = ? ORDER BY event_index", session_id)
    (everywhere,), = rows("SELECT COUNT(*) FROM remote_runtime_outputs")
    (next_index,), = rows("SELECT next_event_index FROM agent_sessions WHERE session_id = ?",
                          session_id)
    assert everywhere == len(found)
    return found, next_index


def assert_numbered_exactly_once(found, next_index, owners):
    """Every chunk of `owners` stored once with its own payload; indices 0..N-1."""
    expected = {seq_of(o, i): line_of(o, i) for o in owners for i in range(CHUNKS)}
    seqs = [seq for _, seq, _, _ in found]
    assert len(seqs) == len(set(seqs)) == len(expected)
    assert set(seqs) == set(expected)
    assert all(payload == expected[seq] and stream == "stdout" for _, seq, stream, payload in found)
    assert [index for index, _, _, _ in found] == list(range(len(expected)))
    assert next_index == len(expected)
    for owner in owners:
        own = [seq for seq in seqs if seq // SEQ_STRIDE == owner]
        assert own == sorted(own), f"producer {owner}'s chunks are out of order"


def assert_receipts_match(reports, found):
    """A receipt's `accepted` chunks are the tail of its batch, numbered up to its last index.

    (A range is sent in seq order, so whatever an earlier batch left unstored is
    never below a later batch's first seq: the new chunks are always a tail.)
    """
    index_of = {seq: index for index, seq, _, _ in found}
    for report in reports:
        for first, size, accepted, duplicates, last_index in report["receipts"]:
            assert accepted + duplicates == size
            if accepted:
                tail = range(first + size - accepted, first + size)
                assert [index_of[seq_of(report["owner"], i)] for i in tail] == list(
                    range(last_index - accepted + 1, last_index + 1))


def switches(found):
    """How often consecutive event indices change owner (a serial run has owners - 1)."""
    owners = [seq // SEQ_STRIDE for _, seq, _, _ in found]
    return sum(a != b for a, b in zip(owners, owners[1:]))


def test_concurrent_producer_processes_number_every_chunk_once(new_session, database_url, rows):
    sid = new_session()
    plan = [(p, 0, None) for p in range(PRODUCERS)]

    reports, elapsed, exit_codes = run_producers(database_url, sid, plan)

    assert_all_finished(reports, exit_codes)
    found, next_index = stored(rows, sid)
    total = PRODUCERS * CHUNKS
    print(f"\n{total} chunks, {PRODUCERS} processes, {elapsed:.2f}s,"
          f" {total / elapsed:.0f} chunks/s, switches={switches(found)}, lost={total - len(found)}")
    assert_numbered_exactly_once(found, next_index, range(PRODUCERS))
    assert switches(found) >= PRODUCERS, "the producers ran one after another"
    assert_receipts_match(reports, found)
    receipts = [r for report in reports for r in report["receipts"]]
    assert len(receipts) == total // BATCH
    assert all(accepted == BATCH for _, _, accepted, _, _ in receipts)
    # a batch is one transaction, so each turn holds exactly one producer's batch
    index_of = {seq: index for index, seq, _, _ in found}
    turns = rows("SELECT content, metadata FROM session_messages WHERE session_id = ?", sid)
    assert rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", sid) == [
        (len(turns),)]
    expected = {}
    for owner in range(PRODUCERS):
        for first, stop in batches(0):
            texts = [f"p{owner} i{i}" for i in range(first, stop - 1) if i % BATCH != BATCH // 2]
            expected["\n\n".join(texts)] = [index_of[seq_of(owner, first)],
                                             index_of[seq_of(owner, stop - 1)]]
    assert {content: json.loads(metadata)["event_range"] for content, metadata in turns} == expected
    assert len(turns) == len(expected)


def test_producers_racing_on_the_same_seqs_store_each_once(new_session, database_url, rows):
    sid = new_session()
    owners = range(PRODUCERS // 2)
    # each range has an original sender and a re-sender, meeting before every round
    plan = [sender for o in owners for sender in ((o, 0, o), (o, RESEND_SHIFT, o))]

    reports, elapsed, exit_codes = run_producers(database_url, sid, plan)

    assert_all_finished(reports, exit_codes)
    found, next_index = stored(rows, sid)
    unique, sent = len(owners) * CHUNKS, len(plan) * CHUNKS
    receipts = [r for report in reports for r in report["receipts"]]
    partial = sum(0 < accepted < size for _, size, accepted, _, _ in receipts)
    print(f"\n{sent} chunks sent ({unique} unique), {len(plan)} processes, {elapsed:.2f}s,"
          f" {sent / elapsed:.0f} chunks/s, partly-new batches={partial},"
          f" lost={unique - len(found)}")
    assert_numbered_exactly_once(found, next_index, owners)
    assert_receipts_match(reports, found)
    assert sum(accepted for _, _, accepted, _, _ in receipts) == len(found) == unique
    assert sum(duplicates for _, _, _, duplicates, _ in receipts) == sent - unique
    # the session's counter agrees with the transcript rows written under the race
    (count,), = rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", sid)
    assert rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?"
                " AND role IN ('assistant', 'system')", sid) == [(count,)]
