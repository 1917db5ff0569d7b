"""Many live followers through the documented deployment, producers posting meanwhile.

    .venv/bin/python bench/followers.py [--followers N (1000)] [--sessions S (50)]
        [--seconds T (15)] [--rate R (2 posts/s per session)] [--runs K (3)]
        [--postgresql [--database-url URL]]

gunicorn with gunicorn.conf.py (gevent workers, 2 by default) on loopback, a fresh
SQLite file (or, with --postgresql, an empty PostgreSQL database: a throwaway cluster
unless --database-url names one; followers then wake on NOTIFY), authentication off. Each run: producers post R times
a second (5 lines per post) to each of S running sessions for T seconds with nobody following, then
N followers (spread evenly over the sessions, held by `tests/sse_swarm.py` clients
in 2 separate processes, one thread each) connect, and the same producing runs again.
Then every session completes and each follower must have received every event of
its session once, in order, and `end`.

Prints per run, and the median over runs: followers held, fan-out latency (from the
POST that carried an event being sent, so an upper bound on "from its commit", to its
arrival at a follower) p50/p99, ingest (POST round trip) p99 without and with the
followers and their ratio, and the workers' RSS. Goals on a 2-CPU host: N = 1,000 held,
fan-out p99 < 1 s, ingest p99 ratio <= 2. Bounded: every wait has a deadline.
"""
import argparse
import http.client
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/sse_swarm.py, the swarm client
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/stream.py's gunicorn()

import backends  # noqa: E402
import stream  # noqa: E402

from tests.servers import worker_pids  # noqa: E402
from tests.sse_swarm import Swarm  # noqa: E402

LINES = 5
SWARM_PROCESSES = 2
CONNECT_SECONDS = 120
DRAIN_SECONDS = 120


def post_json(conn, path, body):
    """(status, JSON reply); `conn` may be a port, for a connection of its own (gunicorn
    closes a keep-alive connection idle for 5 s)."""
    if isinstance(conn, int):
        conn = http.client.HTTPConnection("127.0.0.1", conn, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def produce(port, sids, seconds, rate, sent, ingest_times, seqs):
    """Post to each of `sids` `rate` times a second for `seconds`; record when each
    event's POST was sent (sent[(sid, index)]) and each POST's round trip."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    period = 1.0 / rate
    started = time.monotonic()
    tick = 0
    while time.monotonic() - started < seconds:
        for sid in sids:
            first = seqs[sid]
            seqs[sid] += LINES
            chunks = [{"seq": first + i, "data": f"line {first + i} of {sid}"} for i in range(LINES)]
            at = time.monotonic()
            status, body = post_json(conn, f"/api/remote/sessions/{sid}/output", {"chunks": chunks})
            ingest_times.append(time.monotonic() - at)
            assert status == 200 and body["accepted"] == LINES, (status, body)
            for index in range(body["last_event_index"] - LINES + 1, body["last_event_index"] + 1):
                sent[(sid, index)] = at
        tick += 1
        time.sleep(max(0.0, started + tick * period - time.monotonic()))


def run_producers(port, sids, seconds, rate, seqs, threads=10):
    sent, ingest_times = {}, []
    groups = [sids[n::threads] for n in range(threads)]
    workers = [threading.Thread(target=produce, args=(port, group, seconds, rate, sent,
                                                      ingest_times, seqs)) for group in groups]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(seconds + 120)
    return sent, ingest_times


def swarm_process(port, paths, ready, results):
    """One client process: hold `paths` open, say when all are up, read until all end."""
    swarm = Swarm("127.0.0.1", port, paths)
    up = swarm.run(time.monotonic() + CONNECT_SECONDS,
                   lambda s: all(f.status is not None for f in s.followers))
    ready.put((up, [f.status for f in swarm.followers]))
    swarm.run(time.monotonic() + CONNECT_SECONDS + DRAIN_SECONDS,
              lambda s: all(f.ended or f.closed for f in s.followers))
    results.put([(f.path, f.ids, f.arrived, f.ended) for f in swarm.followers])
    swarm.close()


def rss_mb(master_pid):
    total = 0
    for pid in worker_pids(master_pid):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def one_run(args, port, master_pid, run):
    sids = [post_json(port, "/api/remote/sessions", {"session_type": "agent"})[1]["session"]
            ["session_id"] for _ in range(args.sessions)]
    seqs = dict.fromkeys(sids, 0)
    _, alone = run_producers(port, sids, args.seconds, args.rate, seqs)
    rss_idle = rss_mb(master_pid)
    paths = [f"/api/remote/sessions/{sids[n % len(sids)]}/stream" for n in range(args.followers)]
    ready, results = multiprocessing.Queue(), multiprocessing.Queue()
    clients = [multiprocessing.Process(target=swarm_process,
                                       args=(port, paths[n::SWARM_PROCESSES], ready, results))
               for n in range(SWARM_PROCESSES)]
    for client in clients:
        client.start()
    states = [ready.get(timeout=CONNECT_SECONDS + 30) for _ in clients]
    held = sum(status == 200 for _, statuses in states for status in statuses)
    sent, followed = run_producers(port, sids, args.seconds, args.rate, seqs)
    rss_held = rss_mb(master_pid)
    for sid in sids:
        post_json(port, f"/api/remote/sessions/{sid}/complete", {"exit_code": 0})
    seen = [item for _ in clients for item in results.get(timeout=DRAIN_SECONDS + 60)]
    for client in clients:
        client.join(30)
    lags, whole = [], 0
    for path, ids, arrived, ended in seen:
        sid = path.split("/")[4]
        whole += ended and ids == list(range(seqs[sid]))
        lags += [at - sent[(sid, index)] for index, at in zip(ids, arrived) if (sid, index) in sent]
    figures = {
        "held": held, "complete": whole,
        "fanout_p50_ms": percentile(lags, 0.5) * 1000, "fanout_p99_ms": percentile(lags, 0.99) * 1000,
        "ingest_p99_alone_ms": percentile(alone, 0.99) * 1000,
        "ingest_p99_followed_ms": percentile(followed, 0.99) * 1000,
        "rss_idle_mb": rss_idle, "rss_held_mb": rss_held,
    }
    figures["ingest_ratio"] = figures["ingest_p99_followed_ms"] / figures["ingest_p99_alone_ms"]
    figures["kb_per_follower"] = (rss_held - rss_idle) * 1024 / max(1, held)
    print(f"run {run}: {held}/{args.followers} followers held, {whole} got every event once in"
          f" order and `end`; fan-out p50 {figures['fanout_p50_ms']:.0f} ms, p99"
          f" {figures['fanout_p99_ms']:.0f} ms over {len(lags)} deliveries; ingest p99"
          f" {figures['ingest_p99_alone_ms']:.1f} ms alone, {figures['ingest_p99_followed_ms']:.1f} ms"
          f" followed (ratio {figures['ingest_ratio']:.2f}); workers' RSS {rss_idle:.0f} MB ->"
          f" {rss_held:.0f} MB (~{figures['kb_per_follower']:.0f} KB per follower)", flush=True)
    return figures


@contextmanager
def database(args, folder):
    if not args.postgresql:
        yield f"sqlite:///{folder / 'followers.sqlite'}"
        return
    with backends.postgres(args.database_url) as url:
        yield url


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=2.0, help="posts per second per session")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--postgresql", action="store_true", help="PostgreSQL, not SQLite")
    parser.add_argument("--database-url", help="with --postgresql: an empty database to use")
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as tmp, database(args, Path(tmp)) as url:
        print(backends.describe(url if args.postgresql else None))
        with stream.gunicorn(url, args.workers, 8) as port:
            master = stream.LAST_MASTER_PID
            for run in range(1, args.runs + 1):
                runs.append(one_run(args, port, master, run))
    print(f"\nmedian of {len(runs)} runs ({args.followers} followers, {args.sessions} sessions,"
          f" {args.rate:g} posts/s each of {LINES} lines, {args.seconds:g} s):")
    for key in runs[0]:
        print(f"  {key:24} {statistics.median(r[key] for r in runs):10.2f}")
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    goals = (median["held"] >= args.followers and median["fanout_p99_ms"] < 1000
             and median["ingest_ratio"] <= 2)
    print(f"goals (all held, fan-out p99 < 1 s, ingest p99 ratio <= 2): {'met' if goals else 'NOT met'}")


if __name__ == "__main__":
    main()
