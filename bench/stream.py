"""Live stream and concurrent ingest through a real gunicorn, against a raw SELECT.

    .venv/bin/python bench/stream.py [--events N] [--repeat R (5)] [--database-url URL]

Replay: a completed session of N buffered Claude lines read over HTTP from the start
to `event: end`, against a raw SELECT of the same rows through the bare driver
(sqlite3, or psycopg with --database-url postgresql+psycopg://...; goal: ratio >= 0.5).
Ingest: 4 processes POST to one session through 2 workers; each chunk once.
The worker class is gunicorn.conf.py's (gevent; GUNICORN_WORKER_CLASS=gthread for threads).
On PostgreSQL each database (replay, ingest) is a fresh schema, dropped afterwards,
and the filled table is ANALYZEd before the replay, as autovacuum would have it.

Same rows, same columns: since migration 0010 each buffer row holds the JSON its
`output` event sends (`event_json`, written by ingest), and replay reads only
`event_index, event_json`. The raw SELECT reads those same two columns
(REPLAY_COLUMNS, imported from the repository), so both sides fetch the same bytes;
the stream adds paging, SSE framing and HTTP. The JSON escaping of each payload is
not in either figure: ingest pays it once per line (no change measurable in
bench/ingest.py, ~1 us against ~100 us per line), and a row takes ~630 B more.

Measured on a shared 2-CPU host, other engineers' tests running (load 1-3.5),
SQLite 3.40.1, N = 100,000, --repeat 3, before and after run alternately:

    before (escaping on read, one write per 5,000-event page; only the
        authentication fix above applied): 0.26, 0.40, 0.33
        (170,255 / 188,348 / 171,391 events/s against 656,564 / 475,755 / 513,793)
    after: 0.41, 0.56, 0.52 (317,663 / 277,505 / 374,824 events/s against
        781,754 / 494,903 / 722,216); final code, load 0.6-0.8: 0.49, 0.57, 0.69
        (283,457 / 302,886 / 406,884 against 579,561 / 526,765 / 585,777)
    PostgreSQL 15 on loopback, one run each: before 0.34 (103,876 / 308,627),
        after 0.57 (194,633 / 341,364)

The raw side alone moves by 1.6x between runs on this host, so read ratios over
several runs; the stream needs the CPU for two processes (gunicorn and this
reader), the raw SELECT for one.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from contextlib import contextmanager
from contextlib import nullcontext
from pathlib import Path

from ingest import backend_name  # bench/ingest.py, beside this file
from ingest import claude_lines  # the same realistic lines
from ingest import fresh_schema
from sqlalchemy import create_engine
from sqlalchemy import make_url
from sqlalchemy.pool import NullPool

from app import create_app
from app import db
from app.core.records import Chunk
from app.extensions import db as sqla
from app.services import sessions
from app.services.ingest import complete_session
from app.services.ingest import ingest_output
from app.storage.repositories.dialect import placeholders
from app.storage.repositories.outputs import REPLAY_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LAST_MASTER_PID = None  # the master of the gunicorn last started by gunicorn()
OUTPUT = b"\nevent: output\n"
# What the stream's replay reads (app/storage/repositories/outputs.py), minus its
# paging: the same columns, so both sides fetch the same bytes.
REPLAY_SELECT = (f"SELECT {REPLAY_COLUMNS} FROM remote_runtime_outputs"
                 " WHERE session_id = {m} ORDER BY event_index")
PRODUCERS, PER_PRODUCER, BATCH = 4, 5000, 100


def fill(url, lines):
    """A completed session holding `lines`, written by the service layer 1000 per call."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url})
    with app.app_context():
        db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
        sid = sessions.open_session({"session_type": "agent"}, db.writing()).session_id
        for at in range(0, len(lines), 1000):
            chunks = [Chunk(line, "stdout", at + i) for i, line in enumerate(lines[at:at + 1000])]
            ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
        complete_session(sid, 0, db.writing())
        if sqla.engine.dialect.name == "postgresql":
            # Statistics, as autovacuum would have them before anyone replays: without
            # them the planner sorted the session's rows on disk for every page.
            with sqla.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE remote_runtime_outputs")
        sqla.session.remove()
        sqla.engine.dispose()  # gunicorn opens the database next; leave no connection behind
    return sid


def baseline(url, sid):
    """Rows/s of a raw SELECT of the session's buffer, fetchall, on the bare driver:
    sqlite3 on the file of a sqlite:/// URL, else the URL's own driver (psycopg)."""
    if make_url(url).get_backend_name() == "sqlite":
        with closing(sqlite3.connect(make_url(url).database)) as conn:
            start = time.perf_counter()
            rows = conn.execute(REPLAY_SELECT.format(m="?"), (sid,)).fetchall()
            return len(rows) / (time.perf_counter() - start)
    engine = create_engine(url, poolclass=NullPool)
    conn = engine.raw_connection()
    try:
        cur = conn.cursor()
        start = time.perf_counter()
        cur.execute(REPLAY_SELECT.format(m="%s"), (sid,))
        rows = cur.fetchall()
        return len(rows) / (time.perf_counter() - start)
    finally:
        conn.close()
        engine.dispose()


def stored_rows(url, sid):
    """(event_index, producer_seq) of the session's buffer, in order (not timed)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            sql = ("SELECT event_index, producer_seq FROM remote_runtime_outputs"
                   f" WHERE session_id = {placeholders(conn, 1)} ORDER BY event_index")
            return [tuple(row) for row in conn.exec_driver_sql(sql, (sid,))]
    finally:
        engine.dispose()


@contextmanager
def database(database_url, tmp, name):
    """The URL of a new database: `tmp`/`name`.sqlite, or a fresh schema in `database_url`."""
    if database_url:
        with fresh_schema(database_url) as url:
            yield url
    else:
        yield f"sqlite:///{Path(tmp) / f'{name}.sqlite'}"


@contextmanager
def gunicorn(url, workers, threads):
    """gunicorn on a free loopback port, started as tests/e2e starts it; always stopped."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Authentication off, as in tests/servers.py: the bench measures the stream, not tokens.
    env = {**os.environ, "TURNLOG_SQLALCHEMY_DATABASE_URI": url, "TURNLOG_AUTH_DISABLED": "true",
           "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers),
           "GUNICORN_THREADS": str(threads)}
    subprocess.run([BIN / "flask", "--app", "wsgi", "db-upgrade"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=60)
    # Boot log (worker class, a line per worker) to stderr, the access log away. No
    # control socket: its default path is shared by every gunicorn of this user.
    proc = subprocess.Popen([BIN / "gunicorn", "--no-control-socket"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL)
    global LAST_MASTER_PID  # bench/followers.py reads its workers' memory
    LAST_MASTER_PID = proc.pid
    try:
        for _ in range(300):  # up to 30 s for the workers to boot
            try:
                status, body = request(port, "GET", "/api/remote/sessions?limit=1")
                assert status == 200, (status, body)
                break
            except OSError:
                assert proc.poll() is None, "gunicorn exited; is the port taken?"
                time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not answer within 30 s")
        worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gevent")
        print(f"gunicorn (gunicorn.conf.py): {worker_class}, {workers} worker(s)"
              f" ({threads} threads each under gthread)")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def request(port, method, path, body=None, conn=None):
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def read_stream(port, sid):
    """(events/s, seconds to the first output event, output events seen, last id)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    conn.request("GET", f"/api/remote/sessions/{sid}/stream")
    response = conn.getresponse()
    assert response.status == 200, response.status
    count, first, carry, tail = 0, None, b"", b""
    while b"\nevent: end\n" not in tail[-512:]:  # the end frame is < 200 B
        block = response.read1(1 << 16)
        if not block:
            raise RuntimeError("stream closed before `event: end`")
        # Count in the block as it came, plus a marker cut in two across the seam
        # (carry is one byte shorter than a marker, so nothing is counted twice).
        count += block.count(OUTPUT) + (carry + block[:len(OUTPUT) - 1]).count(OUTPUT)
        first = first or (count and time.perf_counter() - start)
        carry = (carry + block)[-(len(OUTPUT) - 1):]
        tail = tail[-8192:] + block[-8192:]  # the stream's last >= 8 KiB, for the last id
    elapsed = time.perf_counter() - start
    conn.close()
    at = tail.rindex(b"\nid: ") + 5
    return count / elapsed, first, count, int(tail[at:tail.index(b"\n", at)])


def post_all(port, sid, bodies):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # one keep-alive socket
    replies = [request(port, "POST", f"/api/remote/sessions/{sid}/output", b, conn) for b in bodies]
    return sum(reply["accepted"] for status, reply in replies if status == 200)


def concurrent_ingest(url, lines):
    """(chunks/s, rows stored, exactly-once-and-gap-free) for 4 producers on one session."""
    total = PRODUCERS * PER_PRODUCER
    # Bodies are encoded up front, so the clock times the server, not json.dumps.
    bodies = [json.dumps({"chunks": [{"seq": at + i, "data": line}
                                     for i, line in enumerate(lines[at:at + BATCH])]})
              for at in range(0, total, BATCH)]
    with gunicorn(url, 2, 4) as port, multiprocessing.Pool(PRODUCERS) as pool:
        status, body = request(port, "POST", "/api/remote/sessions", '{"session_type": "agent"}')
        assert status == 201, body
        sid = body["session"]["session_id"]
        start = time.perf_counter()
        work = [(port, sid, bodies[p::PRODUCERS]) for p in range(PRODUCERS)]
        accepted = sum(pool.starmap_async(post_all, work).get(timeout=300))
        elapsed = time.perf_counter() - start
    rows = stored_rows(url, sid)
    exact = ([r[0] for r in rows] == list(range(total))
             and sorted(r[1] for r in rows) == list(range(total)) and accepted == total)
    return total / elapsed, len(rows), exact


def replay(url, lines, repeat):
    """(raw SELECT rows/s, reads) for a session of `lines` filled into the new database
    `url`; each read is read_stream's (events/s, first, count, last id). Best of
    `repeat` on both sides: the host is shared, and a single read is noisy."""
    start = time.perf_counter()
    sid = fill(url, lines)
    n = len(lines)
    print(f"filled {n} events, avg {sum(map(len, lines)) / n:.0f} B/line, by"
          f" ingest_output x1000 at {n / (time.perf_counter() - start):,.0f} events/s")
    base = max(baseline(url, sid) for _ in range(repeat))
    with gunicorn(url, 1, 4) as port:
        reads = [read_stream(port, sid) for _ in range(repeat)]
    return base, reads


def replay_complete(reads, n):
    """Every read saw all n output events and ended on id n - 1."""
    return all(r[2:] == (n, n - 1) for r in reads)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="buffered lines (N)")
    parser.add_argument("--repeat", type=int, default=5, help="best of R reads, both sides")
    parser.add_argument("--database-url", default=None,
                        help="a PostgreSQL URL (postgresql+psycopg://...); default: SQLite files")
    args = parser.parse_args()
    n = args.events
    backend = backend_name(args.database_url)
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("bench/stream.py: timed out"))
    signal.alarm(900)  # SystemExit, not a kill: the finally blocks still stop gunicorn
    # The init line dropped, so that every 100-line POST carries 10 whole turns.
    lines = claude_lines(max(n, PRODUCERS * PER_PRODUCER) + 1)[1:]
    tmp_dir = nullcontext() if args.database_url else tempfile.TemporaryDirectory(
        prefix="turnlog-bench-")
    with tmp_dir as tmp:
        with database(args.database_url, tmp, "stream") as url:
            base, reads = replay(url, lines[:n], args.repeat)
        with database(args.database_url, tmp, "ingest") as url:
            rate, stored, exact = concurrent_ingest(url, lines)
    served, first, count, last = max(reads)
    print(f"\n{f'replay of {n} events ({backend})':<36}{'events/s':>10}{'vs baseline':>13}")
    print(f"{f'raw {backend} SELECT, fetchall':<36}{base:>10,.0f}{1:>13.2f}")
    print(f"{'GET /stream via gunicorn, to end':<36}{served:>10,.0f}{served / base:>13.2f}")
    ok = replay_complete(reads, n)
    print(f"best read: {count} output events, last id {last}, first output event after"
          f" {first:.2f} s; all {len(reads)} reads complete -> {'ok' if ok else 'WRONG'}")
    print(f"goal (stream ratio >= 0.5): {'met' if served / base >= 0.5 else 'NOT met'}")
    print(f"\nconcurrent ingest, {PRODUCERS} processes x {PER_PRODUCER} chunks, {BATCH}/POST:"
          f" {rate:,.0f} chunks/s\nstored {stored}, event_index 0..N-1, each seq once"
          f" -> {'ok' if exact else 'WRONG'}")
    return 0 if ok and exact else 1


if __name__ == "__main__":
    sys.exit(main())
