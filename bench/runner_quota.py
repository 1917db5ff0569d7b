"""One runner at full speed against its user's daily byte quota (issue 29).

    .venv/bin/python bench/runner_quota.py [--quota-mb Q (256)] [--batch-kb B (4096)]

gunicorn with gunicorn.conf.py (gevent, 2 workers) on a fresh SQLite file,
authentication off, MAX_OUTPUT_BYTES_PER_USER_PER_DAY = Q MB. One client posts
batches of B KiB (lines of 64 KiB) to sessions of one user, opening a new session
for every 64 MB as a runner spreading its output would (so the per-session limit never
trips), spelling the user differently each time, until it gets 429. Printed: the
rate it wrote at, when and after how many bytes the 429 came, its Retry-After, and
whether every accepted byte is stored (the sessions' output_bytes and the day's
counter, read from the database) and no refused byte is. Bounded: at most Q / B + 1
batches beyond the quota, and a 10-minute deadline.

Measured on a shared 2-CPU host (SQLite 3.40.1), defaults: 256 MiB written in 6.0 s
(42.6 MiB/s) into 5 sessions of one user spelt 4 ways, then 429 quota_exceeded
(output_bytes_per_user_per_day, Retry-After to the UTC day's end); the sessions'
output_bytes, the buffer rows and the day's counter ("quser") all hold exactly the
268,435,456 bytes accepted.
"""
import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import stream  # noqa: E402  bench/stream.py: gunicorn(), request()

DEADLINE_SECONDS = 600
LINE_KB = 64
SESSION_MB = 64
SPELLINGS = ["quser", "QUSER", "quser ", " Quser"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quota-mb", type=int, default=256)
    parser.add_argument("--batch-kb", type=int, default=4096)
    args = parser.parse_args()
    quota = args.quota_mb * 1024 * 1024
    os.environ["TURNLOG_MAX_OUTPUT_BYTES_PER_USER_PER_DAY"] = str(quota)
    line = "y" * (LINE_KB * 1024)
    per_batch = max(1, args.batch_kb // LINE_KB)
    batch_bytes = per_batch * len(line)
    with tempfile.TemporaryDirectory() as tmp:
        db_file = Path(tmp) / "quota.sqlite"
        with stream.gunicorn(f"sqlite:///{db_file}", workers=2, threads=8) as port:
            accepted = 0
            sid, in_session, seq, opened = None, 0, 0, 0
            started = time.perf_counter()
            while time.perf_counter() - started < DEADLINE_SECONDS:
                if sid is None or in_session + batch_bytes > SESSION_MB * 1024 * 1024:
                    status, body = stream.request(port, "POST", "/api/remote/sessions", json.dumps(
                        {"session_type": "agent", "user_id": SPELLINGS[opened % len(SPELLINGS)]}))
                    assert status == 201, (status, body)
                    sid, in_session, opened = body["session"]["session_id"], 0, opened + 1
                chunks = [{"seq": seq + i, "stream": "stderr", "data": line} for i in range(per_batch)]
                status, body = stream.request(port, "POST", f"/api/remote/sessions/{sid}/output",
                                              json.dumps({"chunks": chunks}))
                if status != 200:
                    stopped = time.perf_counter() - started
                    break
                seq += per_batch
                accepted += batch_bytes
                in_session += batch_bytes
            else:
                raise RuntimeError("no 429 before the deadline")
        error = body["error"]
        with closing(sqlite3.connect(db_file)) as conn:
            stored = conn.execute("SELECT SUM(output_bytes) FROM agent_sessions").fetchone()[0]
            rows = conn.execute("SELECT SUM(LENGTH(payload)) FROM remote_runtime_outputs").fetchone()[0]
            counters = conn.execute("SELECT user_key, output_bytes FROM user_day_usage").fetchall()
    print(f"quota {args.quota_mb} MiB a day; batches of {batch_bytes // 1024} KiB in lines of {LINE_KB} KiB;"
          f" {opened} sessions, owner spelt {len(SPELLINGS)} ways")
    print(f"wrote {accepted / 2**20:.0f} MiB in {stopped:.1f} s ({accepted / 2**20 / stopped:.1f} MiB/s),"
          f" then {status} {error['code']} ({error['details'].get('quota')}),"
          f" Retry-After {error['details'].get('retry_after_seconds')} s")
    print(f"stored: sessions' output_bytes {stored}, buffer rows {rows}, day counters {counters}")
    ok = status == 429 and stored == rows == accepted and counters == [("quser", accepted)]
    print("accepted == stored == counted, refused batch stored nowhere ->", "ok" if ok else "FAILED")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
