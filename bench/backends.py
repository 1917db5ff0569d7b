"""Ingest and SSE replay on SQLite and PostgreSQL in one run, in one table.

    .venv/bin/python bench/backends.py [--ingest-events N] [--replay-events N]
                                       [--batch B] [--repeat R] [--database-url URL]

For each backend, the same lines and the same code as the single-backend benches:
ingest is bench/ingest.py (ingest_output with B lines per call against the raw
driver with one COMMIT per row), replay is bench/stream.py (GET /stream through a
real gunicorn, from the start to `event: end`, against a raw SELECT of the same
rows on the bare driver, best of R). Every measurement gets a database of its own:
SQLite files in a temporary folder, PostgreSQL schemas dropped afterwards.

PostgreSQL is `--database-url` (postgresql+psycopg://...) when given; otherwise a
throwaway cluster started with `.ci/postgres start` in a temporary folder and
stopped at the end, whatever happens.
"""
import argparse
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ingest.py, bench/stream.py

import ingest  # noqa: E402
import stream  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / ".ci" / "postgres"


@contextmanager
def postgres(database_url):
    """`database_url`, or the URL of a throwaway cluster, stopped and deleted on exit."""
    if database_url:
        yield database_url
        return
    # The folder itself, as .ci/run does: as root the script hands it to `postgres`,
    # who could not enter a subfolder of our private (0700) temporary folder.
    cluster = Path(tempfile.mkdtemp(prefix="turnlog-bench-pg-"))
    try:
        started = subprocess.run([CLUSTER, "start", cluster], check=True, text=True,
                                 stdout=subprocess.PIPE, timeout=600)
        url = started.stdout.strip().splitlines()[-1]
        print(f"started a throwaway PostgreSQL cluster in {cluster}")
        yield url
    finally:
        subprocess.run([CLUSTER, "stop", cluster], check=False, timeout=120)
        shutil.rmtree(cluster, ignore_errors=True)


def describe(database_url):
    """One line on the database behind `database_url`, or on SQLite."""
    if not database_url:
        return f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL)"
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            version = conn.exec_driver_sql("SHOW server_version").scalar()
            sync = conn.exec_driver_sql("SHOW synchronous_commit").scalar()
            collate = conn.exec_driver_sql(
                "SELECT datcollate FROM pg_database WHERE datname = current_database()").scalar()
    finally:
        engine.dispose()
    return f"PostgreSQL {version} (synchronous_commit={sync}, LC_COLLATE {collate})"


def measure(database_url, ingest_lines, replay_lines, batch, repeat):
    """The figures of one backend (None: SQLite) as a dict, with `ok` for the checks."""
    name = ingest.backend_name(database_url)
    print(f"\n== {name}: {describe(database_url)}")
    base, (rate, (outputs, count, rows)) = ingest.measure(ingest_lines, (batch,), database_url)
    base, rate = base.wall, rate.wall
    ingest_ok = outputs == len(ingest_lines) and count == rows and rows > 0
    print(f"ingest {len(ingest_lines)} events: raw 1/commit {base:,.0f} events/s,"
          f" service batch {batch} {rate:,.0f} events/s"
          f" -> {'ok' if ingest_ok else 'WRONG'}")
    tmp_dir = tempfile.TemporaryDirectory(prefix="turnlog-bench-")
    with tmp_dir as tmp, stream.database(database_url, tmp, "replay") as url:
        select, reads = stream.replay(url, replay_lines, repeat)
    served = max(reads)[0]
    replay_ok = stream.replay_complete(reads, len(replay_lines))
    print(f"replay {len(replay_lines)} events: raw SELECT {select:,.0f} rows/s,"
          f" GET /stream {served:,.0f} events/s (best of {repeat})"
          f" -> {'ok' if replay_ok else 'WRONG'}")
    return {"backend": name, "ingest": rate, "ingest_base": base, "replay": served,
            "replay_base": select, "ok": ingest_ok and replay_ok}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ingest-events", type=int, default=20_000, help="lines to ingest")
    parser.add_argument("--replay-events", type=int, default=30_000, help="lines to replay")
    parser.add_argument("--batch", type=int, default=100, help="lines per ingest call (B)")
    parser.add_argument("--repeat", type=int, default=3, help="best of R replays, both sides")
    parser.add_argument("--database-url", default=None,
                        help="a PostgreSQL URL (postgresql+psycopg://...); default: a"
                             " throwaway cluster from .ci/postgres")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("bench/backends.py: timed out"))
    signal.alarm(900)  # SystemExit, not a kill: gunicorn and the cluster still get stopped
    ingest_lines = ingest.claude_lines(args.ingest_events)
    # As bench/stream.py does: no init line, so every 1000-line fill call holds whole turns.
    replay_lines = ingest.claude_lines(args.replay_events + 1)[1:]

    results = [measure(None, ingest_lines, replay_lines, args.batch, args.repeat)]
    with postgres(args.database_url) as url:
        results.append(measure(url, ingest_lines, replay_lines, args.batch, args.repeat))

    print(f"\ningest {args.ingest_events} events, replay {args.replay_events} events"
          f" (best of {args.repeat}), same run:\n")
    print(f"| backend | ingest events/s (batch {args.batch}) | ingest ratio vs raw baseline"
          " | replay events/s | replay ratio vs raw SELECT |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['backend']} | {r['ingest']:,.0f} | {r['ingest'] / r['ingest_base']:.2f}"
              f" | {r['replay']:,.0f} | {r['replay'] / r['replay_base']:.2f} |")
    print("\nraw baselines: " + "; ".join(
        f"{r['backend']} 1 COMMIT/row {r['ingest_base']:,.0f} events/s,"
        f" SELECT fetchall {r['replay_base']:,.0f} rows/s" for r in results))
    ok = all(r["ok"] for r in results)
    print(f"checks (rows stored, counters, every replayed event): {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
