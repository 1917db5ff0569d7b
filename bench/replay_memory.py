"""What replaying followers hold in worker memory (issue 29).

    .venv/bin/python bench/replay_memory.py [--mb M (200)] [--line-kb K (512)]
        [--followers F (8)] [--page-bytes B (the app's STREAM_PAGE_BYTES)]

A completed session of M MB of output (lines of K KiB on stderr, so ingest spends no
time on transcripts) in a fresh SQLite file; gunicorn with gunicorn.conf.py (gevent,
2 workers); then F followers at once replay it over HTTP from the start to `end`,
each reading as fast as it can. The workers' RSS (sum of VmRSS) is sampled every
50 ms; printed: before, peak, and the peak's gain in all and per MB of session.
Goal (issue 29): 8 followers of a 200 MB session add < 300 MB. With --page-bytes
1000000000000 the pages are cut by count only (STREAM_PAGE_SIZE rows), as before
the byte budget. Bounded: each follower has a deadline of 10 minutes.

Measured on a shared 2-CPU host (SQLite 3.40.1, gevent, 2 workers, 8 followers of a
200 MB session), workers' RSS gained at the peak:

    lines of 512 KiB:  count-only pages (--page-bytes 1e12): +1,617 MiB (8.09 MiB per MB)
                       byte-bounded pages (4 MiB):            +46 MiB (0.23 MiB per MB)
                       (40 MB session: +75 MiB; the gain does not grow with the session)
    lines of 2000 KiB: count-only: +1,666 MiB; byte-bounded: +73 MiB (0.37 MiB per MB)

The count-only figures already have replay pages framed a write at a time; before
this change each page was also kept framed and encoded whole (issue 29 measured
+4.7 GB for the same 8 followers).
"""
import argparse
import http.client
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stream  # noqa: E402  bench/stream.py: gunicorn()

from app import create_app  # noqa: E402
from app import db  # noqa: E402
from app.core.records import Chunk  # noqa: E402
from app.extensions import db as sqla  # noqa: E402
from app.services import sessions  # noqa: E402
from app.services.ingest import complete_session  # noqa: E402
from app.services.ingest import ingest_output  # noqa: E402
from tests.servers import worker_pids  # noqa: E402

FOLLOW_SECONDS = 600
SAMPLE_SECONDS = 0.05


def fill(url, megabytes, line_kb):
    """A completed session of `megabytes` MB of stderr lines of `line_kb` KiB."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "MAX_OUTPUT_BYTES_PER_USER_PER_DAY": 0,
                      "MAX_SESSION_OUTPUT_BYTES": 0})
    line = "x" * (line_kb * 1024)
    count = megabytes * 1024 * 1024 // len(line)
    per_request = max(1, (4 * 1024 * 1024) // len(line))
    with app.app_context():
        db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
        sid = sessions.open_session({"session_type": "agent"}, db.writing()).session_id
        for at in range(0, count, per_request):
            chunks = [Chunk(line, "stderr", seq) for seq in range(at, min(count, at + per_request))]
            ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
        complete_session(sid, 0, db.writing())
        sqla.session.remove()
        sqla.engine.dispose()
    return sid, count


def read_all(port, sid):
    """How many `output` events one follower read from the start to `end`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/api/remote/sessions/{sid}/stream")
    response = conn.getresponse()
    assert response.status == 200, response.status
    count, carry, tail = 0, b"", b""
    while b"\nevent: end\n" not in tail[-512:]:
        block = response.read1(1 << 16)
        if not block:
            raise RuntimeError("stream closed before `event: end`")
        count += block.count(stream.OUTPUT) + (carry + block[:len(stream.OUTPUT) - 1]).count(stream.OUTPUT)
        carry = (carry + block)[-(len(stream.OUTPUT) - 1):]
        tail = tail[-512:] + block[-512:]
    conn.close()
    return count


def rss_bytes(pids):
    total = 0
    for pid in pids:
        try:
            for row in Path(f"/proc/{pid}/status").read_text().splitlines():
                if row.startswith("VmRSS:"):
                    total += int(row.split()[1]) * 1024
        except OSError:
            pass
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--line-kb", type=int, default=512)
    parser.add_argument("--followers", type=int, default=8)
    parser.add_argument("--page-bytes", type=int, default=None)
    args = parser.parse_args()
    if args.page_bytes is not None:
        os.environ["TURNLOG_STREAM_PAGE_BYTES"] = str(args.page_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'replay.sqlite'}"
        started = time.perf_counter()
        sid, lines = fill(url, args.mb, args.line_kb)
        print(f"session: {args.mb} MB in {lines} lines of {args.line_kb} KiB"
              f" (filled in {time.perf_counter() - started:.1f} s)")
        with stream.gunicorn(url, workers=2, threads=16) as port:
            pids = worker_pids(stream.LAST_MASTER_PID)
            time.sleep(1.0)
            before = rss_bytes(pids)
            results, errors = [], []

            def follow():
                try:
                    results.append(read_all(port, sid))
                except Exception as err:  # reported below
                    errors.append(err)

            threads = [threading.Thread(target=follow, daemon=True) for _ in range(args.followers)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            peak = before
            while any(t.is_alive() for t in threads) and time.perf_counter() - started < FOLLOW_SECONDS:
                peak = max(peak, rss_bytes(pids))
                time.sleep(SAMPLE_SECONDS)
            elapsed = time.perf_counter() - started
        assert not errors, errors
        assert len(results) == args.followers, "a follower missed its deadline"
        assert all(count == lines for count in results), results
        gained = peak - before
        print(f"followers: {args.followers}, each read {lines} events to `end` ({elapsed:.1f} s in all)")
        print(f"worker RSS: before {before / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB,"
              f" gained {gained / 2**20:.0f} MiB ({gained / 2**20 / args.mb:.2f} MiB per MB of session)")


if __name__ == "__main__":
    main()
