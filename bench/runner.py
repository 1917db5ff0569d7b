"""`turnlog run` end to end: throughput against in-process ingest, and line-to-stream latency.

    .venv/bin/python bench/runner.py [--lines N (100000)] [--latency-lines L (400)]
        [--interval S (0.02)] [--runs K (1)] [--workers W (2)] [--poll SECONDS]

gunicorn with gunicorn.conf.py on loopback (bench/stream.py's), a fresh SQLite file per
run, authentication off. Each run:

- throughput: `turnlog run -- cat FILE` posts N Claude stream-json lines (bench/ingest.py's),
  timed from start to exit (session opened, every line acknowledged, usage reported,
  completed), against in-process `ingest_output` at batch 100 on its own fresh file in
  the same run. Goal: ratio >= 0.5. bench/ingest.py's stream ends a turn every 10 lines
  with a result line carrying usage, so the runner also reports usage for every 10
  lines (the reports that piled up while its last one was out go in one request to
  `.../usage-reports`); `no-usage` is the same stream with
  `usage` taken off the result lines, as for a `claude -p` run, whose one result line
  comes at its end.
- latency: a child prints L lines, one every S seconds, each stamped with the time it was
  printed; a follower on `/stream` (app.client, in this process) notes when each arrives.
  Goal: p99 < 300 ms. `direct` is the same with the lines posted one per request from
  this process (no runner): the server's own share. The runner adds its batching clock
  (up to 100 ms, by design) and a request. The server's share is mostly its stream
  poller (`TURNLOG_STREAM_POLL_SECONDS`, 0.1 s by default, on SQLite); `--poll` sets it.

Prints each run and, with --runs > 1, the medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest  # noqa: E402
import stream  # noqa: E402

from app.client import Client  # noqa: E402

TURNLOG = Path(sys.executable).parent / "turnlog"
# The latency child: prints `count` JSON lines, each stamped with the time it printed it.
STAMPER = ("import json, sys, time\n"
           "count, interval = int(sys.argv[1]), float(sys.argv[2])\n"
           "for i in range(count):\n"
           "    print(json.dumps({'type': 'system', 'subtype': 'tick', 'i': i,"
           " 'printed_at': time.time()}), flush=True)\n"
           "    time.sleep(interval)\n")


def run_turnlog(base, spool, command):
    """(seconds, session id) of one `turnlog run` to its exit."""
    start = time.perf_counter()
    done = subprocess.run([TURNLOG, "run", "--server", base, "--token", "unused", "--spool",
                           str(spool), "--", *command], capture_output=True, text=True,
                          timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"turnlog run exited {done.returncode}:\n{done.stderr}")
    return elapsed, done.stderr.split("turnlog: session ", 1)[1].split()[0]


def throughput(base, tmp, lines, name):
    """(turnlog run lines/s, the session it wrote)."""
    source = Path(tmp) / f"{name}.jsonl"
    source.write_text("\n".join(lines) + "\n", "utf-8")
    seconds, sid = run_turnlog(base, Path(tmp) / "spool", ["cat", str(source)])
    return len(lines) / seconds, Client(base).get_session(sid)


def without_usage(lines):
    """The same lines, with `usage` taken off the result lines (so no usage reports)."""
    def strip(line):
        if '"type": "result"' not in line:
            return line
        obj = json.loads(line)
        obj.pop("usage", None)
        return json.dumps(obj)

    return [strip(line) for line in lines]


def latency(base, tmp, count, interval):
    """Milliseconds from each line's print to its arrival on `/stream`, sorted."""
    client = Client(base)
    arrivals = {}
    ready = threading.Event()
    sid_box = {}

    def runner():
        sid_box["seconds"], sid_box["sid"] = run_turnlog(
            base, Path(tmp) / "spool-latency", [sys.executable, "-c", STAMPER, str(count),
                                                str(interval)])

    thread = threading.Thread(target=runner)
    thread.start()
    # The session id comes from the newest session: this run's only one.
    deadline = time.monotonic() + 30
    while not ready.is_set():
        sessions = client.call("GET", "/api/remote/sessions", params={"limit": 1})["sessions"]
        if sessions and sessions[0]["session_type"] == "agent" and sessions[0]["status"] == "running":
            sid_box.setdefault("live", sessions[0]["session_id"])
            ready.set()
        elif time.monotonic() > deadline:
            raise RuntimeError("the latency run's session never appeared")
        else:
            time.sleep(0.01)
    arrivals = arrival_ms(client, sid_box["live"])
    thread.join()
    if len(arrivals) != count:
        raise RuntimeError(f"{len(arrivals)} of {count} lines arrived")
    return sorted(arrivals.values())


def arrival_ms(client, sid):
    """{line number: ms from its print to its arrival on /stream} until the session ends."""
    arrivals = {}
    for event in client.follow(sid, raw=True):
        if event.event == "output":
            line = json.loads(json.loads(event.data)["payload"])
            arrivals[line["i"]] = (time.time() - line["printed_at"]) * 1000
    return arrivals


def direct_latency(base, count, interval):
    """The same lines posted one per request by this process: the server's own share."""
    client = Client(base)
    sid = client.open_session("agent")["session"]["session_id"]
    box = {}
    follower = threading.Thread(target=lambda: box.update(arrival_ms(Client(base), sid)))
    follower.start()
    time.sleep(0.5)  # the follower is connected
    for i in range(count):
        line = json.dumps({"type": "system", "subtype": "tick", "i": i, "printed_at": time.time()})
        client.post_output(sid, [{"seq": i, "stream": "stdout", "data": line}])
        time.sleep(interval)
    client.complete(sid, 0)
    follower.join(60)
    return sorted(box.values())


def percentile(values, p):
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def one_run(lines, args):
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-runner-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'served.sqlite'}"
        with stream.gunicorn(url, workers=args.workers, threads=4) as port:
            base = f"http://127.0.0.1:{port}"
            run_rate, stored = throughput(base, tmp, lines, "usage")
            bare_rate, bare = throughput(base, tmp, without_usage(lines), "no-usage")
            ms = latency(base, tmp, args.latency_lines, args.interval)
            direct_ms = direct_latency(base, args.latency_lines, args.interval)
        in_process = ingest.bench_service(f"sqlite:///{Path(tmp) / 'inproc.sqlite'}", lines, 100)[0].wall
    results = sum('"type": "result"' in line for line in lines)
    ok = (stored["status"] == bare["status"] == "completed" and stored["message_count"] > 0
          and stored["request_count"] >= results > 0 and bare["request_count"] == 0)
    figures = {"in-process lines/s": in_process, "run lines/s": run_rate,
               "ratio": run_rate / in_process, "no-usage lines/s": bare_rate,
               "no-usage ratio": bare_rate / in_process,
               "p50 ms": percentile(ms, 50), "p99 ms": percentile(ms, 99),
               "direct p50 ms": percentile(direct_ms, 50), "direct p99 ms": percentile(direct_ms, 99)}
    print("  ".join(f"{name} {value:,.2f}" for name, value in figures.items())
          + f"  check {'ok' if ok else 'WRONG'}", flush=True)
    return figures, ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--latency-lines", type=int, default=400)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--poll", type=float, default=None,
                        help="TURNLOG_STREAM_POLL_SECONDS for the server (its default: 0.25)")
    args = parser.parse_args()
    if args.poll is not None:
        os.environ["TURNLOG_STREAM_POLL_SECONDS"] = str(args.poll)
    os.environ.setdefault("GUNICORN_WORKER_CLASS", "gevent")
    lines = ingest.claude_lines(args.lines)
    print(f"{args.lines} lines, avg {sum(map(len, lines)) / len(lines):.0f} B/line;"
          f" latency: {args.latency_lines} lines every {args.interval * 1000:.0f} ms")
    results = [one_run(lines, args) for _ in range(args.runs)]
    medians = {name: statistics.median(r[0][name] for r in results) for name in results[0][0]}
    if args.runs > 1:
        print("median  " + "  ".join(f"{name} {value:,.2f}" for name, value in medians.items()))
    print(f"goals: ratio >= 0.5 {'met' if medians['ratio'] >= 0.5 else 'NOT met'};"
          f" p99 < 300 ms {'met' if medians['p99 ms'] < 300 else 'NOT met'}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
