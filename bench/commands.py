"""Command latency: POST .../interrupt -> the command event on a runner's waiting SSE stream.

    .venv/bin/python bench/commands.py [--posts N (200)] [--workers W (1)]
        [--postgresql [--database-url URL]]

gunicorn with gunicorn.conf.py on loopback, a fresh SQLite file (or PostgreSQL),
authentication off. One session; a runner attaches and holds GET .../commands open as
Server-Sent Events; then N times: POST .../interrupt, read the stream until its
`command` event, acknowledge it. Prints p50/p99/max of POST sent -> event read. With
one worker the command wakes the stream in-process at once; with several, a POST that
lands on another worker of a SQLite deployment waits for the stream's next read
(COMMAND_POLL_SECONDS), and on PostgreSQL for the NOTIFY.
"""
import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/stream.py's gunicorn()

import backends  # noqa: E402
import stream  # noqa: E402


def post(port, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, json.dumps(body or {}), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = json.loads(response.read())
    conn.close()
    return response.status, data


def measure(port, posts):
    status, body = post(port, "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201, body
    base = f"/api/remote/sessions/{body['session']['session_id']}"
    assert post(port, f"{base}/runner", {"controls": ["send", "interrupt", "stop"]})[0] == 200
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"{base}/commands", headers={"Accept": "text/event-stream"})
    events = conn.getresponse()
    assert events.status == 200
    times = []
    for _ in range(posts):
        sent = time.perf_counter()
        status, queued = post(port, f"{base}/interrupt")
        assert status == 202, queued
        while True:
            line = events.fp.readline().decode()
            assert line, "the stream ended"
            if line.startswith("data: ") and '"kind":"interrupt"' in line:
                break
        times.append(time.perf_counter() - sent)
        command_id = queued["command"]["command_id"]
        assert post(port, f"{base}/commands/{command_id}/ack", {"outcome": "done"})[0] == 200
    conn.close()
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.postgresql:
            context = backends.postgres(args.database_url)
        else:
            context = None
        url = context.__enter__() if context else f"sqlite:///{Path(folder) / 'bench.sqlite'}"
        try:
            with stream.gunicorn(url, args.workers, 8) as port:
                times = sorted(measure(port, args.posts))
        finally:
            if context:
                context.__exit__(None, None, None)
    ms = [t * 1000 for t in times]
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(f"POST interrupt -> command on the SSE stream, {len(ms)} posts:"
          f" p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms")


if __name__ == "__main__":
    main()
