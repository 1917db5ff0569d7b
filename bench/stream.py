"""Live stream and concurrent ingest through a real gunicorn, against raw sqlite3.

    .venv/bin/python bench/stream.py [--events N] [--repeat R]

Replay: a completed session of N buffered Claude lines read over HTTP from the start
to `event: end`, against a raw sqlite3 SELECT of the same rows (goal: ratio >= 0.5).
Ingest: 4 processes POST to one session through 2 gthread workers; each chunk once.
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
from pathlib import Path

from ingest import claude_lines  # bench/ingest.py, beside this file: the same realistic lines

from app import create_app
from app import db
from app.extensions import db as sqla
from app.services import migrations
from app.services import sessions
from app.services.ingest import complete_session
from app.services.ingest import ingest_output
from app.services.models import Chunk

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
OUTPUT = b"\nevent: output\n"
PRODUCERS, PER_PRODUCER, BATCH = 4, 5000, 100


def fill(path, lines):
    """A completed session holding `lines`, written by the service layer 1000 per call."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}"})
    with app.app_context():
        migrations.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
        sid = sessions.open_session({"session_type": "agent"}, db.writing()).session_id
        for at in range(0, len(lines), 1000):
            chunks = [Chunk(line, "stdout", at + i) for i, line in enumerate(lines[at:at + 1000])]
            ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
        complete_session(sid, 0, db.writing())
        sqla.session.remove()
        sqla.engine.dispose()  # gunicorn opens the file next; leave no connection behind
    return sid


def baseline(path, sid):
    with closing(sqlite3.connect(path)) as conn:
        start = time.perf_counter()
        rows = conn.execute("SELECT event_index, stream, payload, created_at"
                            " FROM remote_runtime_outputs WHERE session_id = ?"
                            " ORDER BY event_index", (sid,)).fetchall()
        return len(rows) / (time.perf_counter() - start)


@contextmanager
def gunicorn(path, workers, threads):
    """gunicorn on a free loopback port, started as tests/e2e starts it; always stopped."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "TURNLOG_SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}",
           "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers),
           "GUNICORN_THREADS": str(threads)}
    subprocess.run([BIN / "flask", "--app", "wsgi", "db-upgrade"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=60)
    # Boot log (worker class, a line per worker) to stderr, the access log away. No
    # control socket: its default path is shared by every gunicorn of this user.
    proc = subprocess.Popen([BIN / "gunicorn", "--no-control-socket"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):  # up to 30 s for the workers to boot
            try:
                request(port, "GET", "/api/remote/sessions?limit=1")
                break
            except OSError:
                assert proc.poll() is None, "gunicorn exited; is the port taken?"
                time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not answer within 30 s")
        print(f"gunicorn (gunicorn.conf.py): gthread, {workers} worker(s) x {threads} threads")
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


def concurrent_ingest(path, lines):
    """(chunks/s, rows stored, exactly-once-and-gap-free) for 4 producers on one session."""
    total = PRODUCERS * PER_PRODUCER
    # Bodies are encoded up front, so the clock times the server, not json.dumps.
    bodies = [json.dumps({"chunks": [{"seq": at + i, "data": line}
                                     for i, line in enumerate(lines[at:at + BATCH])]})
              for at in range(0, total, BATCH)]
    with gunicorn(path, 2, 4) as port, multiprocessing.Pool(PRODUCERS) as pool:
        status, body = request(port, "POST", "/api/remote/sessions", '{"session_type": "agent"}')
        assert status == 201, body
        sid = body["session"]["session_id"]
        start = time.perf_counter()
        work = [(port, sid, bodies[p::PRODUCERS]) for p in range(PRODUCERS)]
        accepted = sum(pool.starmap_async(post_all, work).get(timeout=300))
        elapsed = time.perf_counter() - start
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT event_index, producer_seq FROM remote_runtime_outputs"
                            " WHERE session_id = ? ORDER BY event_index", (sid,)).fetchall()
    exact = ([r[0] for r in rows] == list(range(total))
             and sorted(r[1] for r in rows) == list(range(total)) and accepted == total)
    return total / elapsed, len(rows), exact


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="buffered lines (N)")
    parser.add_argument("--repeat", type=int, default=3, help="best of R reads, both sides")
    args = parser.parse_args()
    n = args.events
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("bench/stream.py: timed out"))
    signal.alarm(900)  # SystemExit, not a kill: the finally blocks still stop gunicorn
    # The init line dropped, so that every 100-line POST carries 10 whole turns.
    lines = claude_lines(max(n, PRODUCERS * PER_PRODUCER) + 1)[1:]
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        path = Path(tmp) / "stream.sqlite"
        start = time.perf_counter()
        sid = fill(path, lines[:n])
        print(f"filled {n} events, avg {sum(map(len, lines[:n])) / n:.0f} B/line, by"
              f" ingest_output x1000 at {n / (time.perf_counter() - start):,.0f} events/s")
        # Best of R on both sides: the host is shared, and a single read is noisy.
        base = max(baseline(path, sid) for _ in range(args.repeat))
        with gunicorn(path, 1, 4) as port:
            reads = [read_stream(port, sid) for _ in range(args.repeat)]
        served, first, count, last = max(reads)
        rate, stored, exact = concurrent_ingest(Path(tmp) / "ingest.sqlite", lines)
    print(f"\n{f'replay of {n} events':<36}{'events/s':>10}{'vs baseline':>13}")
    print(f"{'raw sqlite3 SELECT, fetchall':<36}{base:>10,.0f}{1:>13.2f}")
    print(f"{'GET /stream via gunicorn, to end':<36}{served:>10,.0f}{served / base:>13.2f}")
    ok = all(r[2:] == (n, n - 1) for r in reads)
    print(f"best read: {count} output events, last id {last}, first output event after"
          f" {first:.2f} s; all {len(reads)} reads complete -> {'ok' if ok else 'WRONG'}")
    print(f"goal (stream ratio >= 0.5): {'met' if served / base >= 0.5 else 'NOT met'}")
    print(f"\nconcurrent ingest, {PRODUCERS} processes x {PER_PRODUCER} chunks, {BATCH}/POST:"
          f" {rate:,.0f} chunks/s\nstored {stored}, event_index 0..N-1, each seq once"
          f" -> {'ok' if exact else 'WRONG'}")
    return 0 if ok and exact else 1


if __name__ == "__main__":
    sys.exit(main())
