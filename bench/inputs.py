"""Inputs to live sessions: POST .../messages -> the agent's stdin, and -> its reply on /events.

    .venv/bin/python bench/inputs.py [--sessions 1,100] [--inputs M (10)] [--interval S (2.0)]
        [--ordinary O (20)] [--probes P (10)] [--workers W (2)] [--runs K (1)]
        [--database-url URL]

gunicorn with gunicorn.conf.py (gevent workers, as docs/deploy.md recommends for
streams) on loopback, a fresh SQLite file per run (or a fresh schema of the PostgreSQL
database `--database-url` names), authentication off. For each N of `--sessions`:

1. ingest alone: O ordinary sessions each post 5 lines twice a second (bench/followers.py's
   producers) for M * S seconds; the POST round trips are the ingest figure.
2. N real `turnlog run --interactive --driver claude` processes start, each driving
   tests/fake_claude_stdio.py (echoes each prompt, `isReplay` with its uuid, and answers
   `echo: <prompt>` at once; it logs when it reads each stdin line). Each session gets one
   warm-up input (not timed), then M inputs, one every S seconds from a random phase,
   posted by a pool of client threads, while the producers of step 1 post again.
   A separate process follows `/events` of every interactive session (epoll, no thread
   each) and notes when each reply's `block.completed` arrives; it also holds the command
   channel (`GET .../commands`, SSE) of P sessions open beside their runners, to see when
   the server writes a command on it: the part of the figure that is the server's (it
   sees only the commands still unacknowledged when its stream reads them).
3. every session is stopped (POST .../stop), its runner exits; ingest alone again.

Prints per N: POST -> agent's stdin, POST -> reply on /events, POST -> command on the
channel (the probes) and that -> stdin (the runner's part), each p50/p99/max; the POST's
own round trip; ingest p99 alone (before and after) and with the runners, and the
ratio; the CPU seconds the workers, runners, agents and this bench used while driving;
and the counts: inputs read by the agents once, replies seen once, user rows stored
once; lost and duplicated must be 0. Goals: p99 < 250 ms at N = 100 (both timings),
ingest p99 ratio <= 1.10. Bounded: every wait has a deadline, every process is stopped at the end.
The runners and agents (2 N processes) share the host's CPUs with the server: on a small
host their scheduling is part of the figure, which the probe split shows.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import random
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import followers  # noqa: E402  (its producers)
import stream  # noqa: E402  (its gunicorn())
from ingest import fresh_schema  # noqa: E402

from app.core.inputs import input_uuid  # noqa: E402

TURNLOG = Path(sys.executable).parent / "turnlog"
AGENT = [sys.executable, str(ROOT / "tests" / "fake_claude_stdio.py")]
API = "/api/remote/sessions"
POST_THREADS = 16
START_SECONDS = 180  # for every runner to attach and answer its warm-up input
DRAIN_SECONDS = 60  # after the last input, for its reply
STOP_SECONDS = 60


# -- the follower process: /events of every session, the command channel of a few --

class Reader:
    """One SSE response read off a non-blocking socket: head, chunks, events."""

    def __init__(self, sock, path, kind):
        self.sock, self.path, self.kind = sock, path, kind
        self.raw, self.body, self.head_done, self.closed = b"", b"", False, False
        self.status = None

    def feed(self, data, now, seen):
        self.raw += data
        if not self.head_done:
            head, sep, rest = self.raw.partition(b"\r\n\r\n")
            if not sep:
                return
            self.status = int(head.split(b" ", 2)[1])
            self.head_done, self.raw = True, rest
        self._dechunk()
        *blocks, self.body = self.body.split(b"\n\n")
        for block in blocks:
            self._event(block, now, seen)

    def _dechunk(self):
        at = 0
        while (size_end := self.raw.find(b"\r\n", at)) >= 0:
            size = int(self.raw[at:size_end].split(b";")[0], 16)
            end = size_end + 2 + size + 2
            if len(self.raw) < end:
                break
            self.body += self.raw[size_end + 2:end - 2]
            at = end
        self.raw = self.raw[at:]

    def _event(self, block, now, seen):
        name = data = None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:]
            elif line.startswith(b"data: "):
                data = line[6:]
        if self.kind == "events" and name == b"block.completed":
            text = json.loads(data)["block"].get("text", "")
            if text.startswith("echo: "):
                seen.setdefault(("reply", text[6:]), []).append(now)
        elif self.kind == "commands" and name == b"command":
            command = json.loads(data)
            if command.get("kind") == "input":
                seen.setdefault(("command", command["content"]), []).append(now)


def follow(port, paths, ready, stop, results):
    """Hold every (path, kind) open; note arrivals in `seen` until `stop` is set."""
    selector = selectors.DefaultSelector()
    readers = []
    for path, kind in paths:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream"
                     "\r\n\r\n".encode())
        sock.setblocking(False)
        readers.append(Reader(sock, path, kind))
        selector.register(sock, selectors.EVENT_READ, readers[-1])
    seen = {}
    deadline = time.monotonic() + 30
    while any(r.status is None for r in readers) and time.monotonic() < deadline:
        _read_some(selector, seen, 0.1)
    ready.put([r.status for r in readers])
    while not stop.is_set():
        _read_some(selector, seen, 0.1)
    results.put(seen)
    selector.close()


def _read_some(selector, seen, timeout):
    for key, _ in selector.select(timeout):
        reader = key.data
        try:
            data = reader.sock.recv(262144)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            selector.unregister(reader.sock)
            reader.sock.close()
            reader.closed = True
            continue
        reader.feed(data, time.time(), seen)


# -- the client side: sessions, posts, runners --

_local = threading.local()


def post(port, path, body):
    """(status, JSON reply) on this thread's keep-alive connection, opened again when
    gunicorn closed it."""
    for attempt in range(2):
        conn = getattr(_local, "conn", None) or http.client.HTTPConnection("127.0.0.1", port,
                                                                          timeout=60)
        _local.conn = conn
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        except (http.client.HTTPException, ConnectionError):
            conn.close()
            _local.conn = None
            if attempt:
                raise
    raise AssertionError("unreachable")


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


class Runners:
    """N `turnlog run --interactive` processes, each with its spool, log and agent log."""

    def __init__(self, base, folder, count):
        self.folder = folder
        (folder / "token").write_text("tlr_unused\n")
        self.procs, self.logs, self.agent_logs = [], [], []
        for n in range(count):
            self.logs.append(folder / f"runner-{n}.log")
            self.agent_logs.append(folder / f"agent-{n}.log")
            with open(self.logs[-1], "wb") as err:
                self.procs.append(subprocess.Popen(
                    [TURNLOG, "run", "--server", base, "--token-file", str(folder / "token"),
                     "--spool", str(folder / f"spool-{n}"), "--interactive", "--driver", "claude",
                     "--", *AGENT],
                    env=dict(os.environ, FAKE_AGENT_LOG=str(self.agent_logs[-1])),
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err))

    def session_ids(self, deadline):
        """Each runner's session id, from its log's `turnlog: session SID` line."""
        sids = [None] * len(self.procs)
        while None in sids:
            for n, path in enumerate(self.logs):
                text = path.read_text(errors="replace") if sids[n] is None else ""
                if "turnlog: session " in text and "attached" in text:
                    sids[n] = text.split("turnlog: session ", 1)[1].split()[0]
                elif self.procs[n].poll() is not None and sids[n] is None:
                    raise RuntimeError(f"runner {n} exited {self.procs[n].returncode}: {text}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{sids.count(None)} runners never attached")
            time.sleep(0.2)
        return sids

    def stdin_reads(self):
        """{uuid: [times the agents read a line under it]}."""
        reads = {}
        for path in self.agent_logs:
            for text in path.read_text().splitlines():
                record = json.loads(text)
                line = record.get("line") or {}
                if line.get("type") == "user" and line.get("uuid"):
                    reads.setdefault(line["uuid"], []).append(record["at"])
        return reads

    def wait(self, seconds):
        deadline = time.monotonic() + seconds
        codes = []
        for proc in self.procs:
            try:
                codes.append(proc.wait(max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                proc.kill()
                codes.append(proc.wait())
        return codes

    def kill(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


class Inputs:
    """What was posted: {content: (session id, input id, sent at, answered at, status)}."""

    def __init__(self, port):
        self.port = port
        self.posted = {}
        self.cpu = {}
        self.lock = threading.Lock()

    def send(self, sid, content):
        sent = time.time()
        status, body = post(self.port, f"{API}/{sid}/messages",
                            {"content": content, "client_message_id": content})
        answered = time.time()
        with self.lock:
            self.posted[content] = (sid, body.get("input", {}).get("input_id"), sent, answered,
                                    status)

    def schedule(self, sids, count, interval, tag):
        """`count` inputs to each session, one every `interval` s from a random phase."""
        start = time.monotonic() + 0.5
        plan = sorted((start + random.uniform(0, interval) + k * interval, sid, k)
                      for sid in sids for k in range(count))
        with ThreadPoolExecutor(POST_THREADS) as pool:
            for due, sid, k in plan:
                time.sleep(max(0.0, due - time.monotonic()))
                pool.submit(self.send, sid, f"{tag}-{sid[:8]}-{k}")


def cpu_seconds(pid):
    """User + system CPU seconds process `pid` has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid):
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def cpu_shares(master_pid, runners):
    """CPU seconds used so far: the server's workers, the runners, their agents, this bench."""
    agents = [child for proc in runners.procs for child in children(proc.pid)]
    return {"workers": sum(map(cpu_seconds, children(master_pid))),
            "runners": sum(cpu_seconds(proc.pid) for proc in runners.procs),
            "agents": sum(map(cpu_seconds, agents)), "bench": sum(os.times()[:2])}


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


# -- one run --

def percentiles(values):
    if not values:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "n": 0}
    ordered = sorted(values)
    return {"p50": statistics.median(ordered) * 1000,
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            "max": ordered[-1] * 1000, "n": len(ordered)}


def _produce_apart(port, sids, seqs, seconds, results):
    results.put((followers.run_producers(port, sids, seconds, 2.0, seqs)[1], seqs))


def ingest_phase(port, sids, seqs, seconds):
    """The ordinary sessions' POSTs' round trips, from a process of their own: in this
    one they would wait for the GIL behind the inputs' threads, a wait the server has no
    part in (and only while driving)."""
    spawn = multiprocessing.get_context("spawn")  # not a fork of this threaded process
    results = spawn.Queue()
    proc = spawn.Process(target=_produce_apart, args=(port, sids, dict(seqs), seconds, results))
    proc.start()
    times, moved = results.get(timeout=seconds + 180)
    proc.join(30)
    seqs.update(moved)
    return times


def open_sessions(port, count):
    sids = [post(port, API, {"session_type": "agent"})[1]["session"]["session_id"]
            for _ in range(count)]
    return sids, dict.fromkeys(sids, 0)


def start_followers(port, sids, probes):
    paths = [(f"{API}/{sid}/events", "events") for sid in sids]
    paths += [(f"{API}/{sid}/commands", "commands") for sid in sids[:probes]]
    ready, results, stop = multiprocessing.Queue(), multiprocessing.Queue(), multiprocessing.Event()
    proc = multiprocessing.Process(target=follow, args=(port, paths, ready, stop, results))
    proc.start()
    statuses = ready.get(timeout=60)
    assert all(s == 200 for s in statuses), statuses
    return proc, stop, results


def drive(port, runners, args, count, seqs_box):
    """Warm up, then drive every session while the producers post; (inputs, ingest times,
    session ids, follower results)."""
    sids = runners.session_ids(time.monotonic() + START_SECONDS)
    proc, stop, results = start_followers(port, sids, args.probes)
    try:
        warm = Inputs(port)
        for sid in sids:
            warm.send(sid, f"warm-{sid[:8]}")
        wait_for(lambda: len(runners.stdin_reads()) >= count, START_SECONDS,
                 "the warm-up inputs on the agents' stdin")
        time.sleep(1.0)  # their replies, acks and echoes
        inputs = Inputs(port)
        ordinary, seqs = seqs_box
        ingest = {}
        producers = threading.Thread(target=lambda: ingest.update(
            times=ingest_phase(port, ordinary, seqs, args.inputs * args.interval)))
        cpu = cpu_shares(stream.LAST_MASTER_PID, runners)
        producers.start()
        inputs.schedule(sids, args.inputs, args.interval, "in")
        producers.join(args.inputs * args.interval + 120)
        inputs.cpu = {name: used - cpu[name]
                      for name, used in cpu_shares(stream.LAST_MASTER_PID, runners).items()}
        time.sleep(min(DRAIN_SECONDS, 3.0))
        for sid in sids:
            post(port, f"{API}/{sid}/stop", {})
        codes = runners.wait(STOP_SECONDS)
    finally:
        stop.set()
    seen = results.get(timeout=60)
    proc.join(30)
    return inputs, ingest.get("times", []), sids, seen, codes


def stored_user_rows(port, sids):
    """{session id: user rows of remote prompts} as the API lists them."""
    rows = {}
    for sid in sids:
        status, body = get(port, f"{API}/{sid}/messages?limit=1000")
        assert status == 200, body
        rows[sid] = sum(m["role"] == "user" for m in body["messages"])
    return rows


def latencies(inputs, reads, seen):
    """The four timings, in seconds, and the counts of lost and duplicated."""
    figures = {"stdin": [], "reply": [], "channel": [], "runner": [], "post": []}
    lost = dup = 0
    for content, (sid, input_id, sent, answered, status) in inputs.posted.items():
        figures["post"].append(answered - sent)
        read = reads.get(input_uuid(sid, input_id), []) if status == 202 else []
        replies = seen.get(("reply", content), [])
        lost += not read or not replies
        dup += len(read) > 1 or len(replies) > 1 or status != 202
        if read:
            figures["stdin"].append(read[0] - sent)
        if replies:
            figures["reply"].append(replies[0] - sent)
        written = seen.get(("command", content))
        if written and read:
            figures["channel"].append(written[0] - sent)
            figures["runner"].append(read[0] - written[0])
    return figures, lost, dup


def one_run(args, url, count):
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-inputs-") as tmp, \
            stream.gunicorn(url, args.workers, 8) as port:
        base = f"http://127.0.0.1:{port}"
        ordinary, seqs = open_sessions(port, args.ordinary)
        seconds = args.inputs * args.interval
        before = ingest_phase(port, ordinary, seqs, seconds)
        load = [os.getloadavg()[0]]
        runners = Runners(base, Path(tmp), count)
        try:
            inputs, during, sids, seen, codes = drive(port, runners, args, count, (ordinary, seqs))
            load.append(os.getloadavg()[0])
            reads = runners.stdin_reads()
        finally:
            runners.kill()
        after = ingest_phase(port, ordinary, seqs, seconds)
        load.append(os.getloadavg()[0])
        rows = stored_user_rows(port, sids)
    figures, lost, dup = latencies(inputs, reads, seen)
    expected_rows = args.inputs + 1  # the warm-up input too
    wrong_rows = sum(n != expected_rows for n in rows.values())
    return {"n": count, "figures": figures, "lost": lost, "dup": dup, "wrong_rows": wrong_rows,
            "posted": len(inputs.posted), "cpu": inputs.cpu, "seconds": seconds,
            "exits": sorted(set(codes)), "load": load,
            "alone": before + after, "before": before, "after": after, "during": during}


def show(result):
    ms = {name: percentiles(values) for name, values in result["figures"].items()}
    names = {"post": "POST answered (202)", "stdin": "POST -> agent's stdin",
             "reply": "POST -> reply on /events", "channel": "POST -> command on the channel",
             "runner": "  command on the channel -> stdin"}
    print(f"\n{result['n']} interactive sessions, {result['posted']} inputs; load"
          f" {' / '.join(f'{x:.2f}' for x in result['load'])} (before / driving / after)")
    for key, label in names.items():
        f = ms[key]
        print(f"  {label:34} p50 {f['p50']:7.1f} ms  p99 {f['p99']:7.1f} ms  max {f['max']:7.1f} ms"
              f"  ({f['n']})")
    print("  CPU seconds while driving (" + f"{result['seconds']:g} s): "
          + ", ".join(f"{name} {used:.1f}" for name, used in result["cpu"].items()))
    alone, during = percentiles(result["alone"]), percentiles(result["during"])
    ratio = during["p99"] / alone["p99"]
    print(f"  ingest p99 alone {alone['p99']:.1f} ms (before {percentiles(result['before'])['p99']:.1f},"
          f" after {percentiles(result['after'])['p99']:.1f}; {alone['n']} posts), with the runners"
          f" {during['p99']:.1f} ms ({during['n']} posts): ratio {ratio:.2f}")
    print(f"  lost {result['lost']}, duplicated {result['dup']}, sessions whose user rows are"
          f" not inputs + 1: {result['wrong_rows']}; runners' exit codes {result['exits']}")
    return {"stdin_p50": ms["stdin"]["p50"], "stdin_p99": ms["stdin"]["p99"],
            "reply_p50": ms["reply"]["p50"], "reply_p99": ms["reply"]["p99"],
            "channel_p99": ms["channel"]["p99"], "runner_p99": ms["runner"]["p99"],
            "ingest_ratio": ratio}


@contextmanager
def database(args, folder, name):
    if not args.database_url:
        yield f"sqlite:///{folder / f'{name}.sqlite'}"
        return
    with fresh_schema(args.database_url) as url:
        yield url


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,100", help="interactive sessions, comma-separated")
    parser.add_argument("--inputs", type=int, default=10, help="timed inputs per session (M)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between a session's inputs")
    parser.add_argument("--ordinary", type=int, default=20, help="ordinary sessions posting output")
    parser.add_argument("--probes", type=int, default=10, help="sessions whose channel is probed")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--database-url", help="PostgreSQL (postgresql+psycopg://...); default SQLite")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    summary = {n: [] for n in counts}
    ok = True
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        for run in range(1, args.runs + 1):
            for n in counts:
                with database(args, Path(tmp), f"run{run}-{n}") as url:
                    result = one_run(args, url, n)
                summary[n].append(show(result))
                ok = ok and result["lost"] == result["dup"] == result["wrong_rows"] == 0
    if args.runs > 1:
        for n, runs in summary.items():
            print(f"\nmedian of {len(runs)} runs at {n} sessions: " + ", ".join(
                f"{key} {statistics.median(r[key] for r in runs):.2f}" for key in runs[0]))
    top = summary[max(counts)]
    goals = {"POST -> stdin p99 < 250 ms": statistics.median(r["stdin_p99"] for r in top) < 250,
             "POST -> reply p99 < 250 ms": statistics.median(r["reply_p99"] for r in top) < 250,
             "ingest p99 ratio <= 1.10": statistics.median(r["ingest_ratio"] for r in top) <= 1.10}
    print(f"\ngoals at {max(counts)} sessions (medians): " + "; ".join(
        f"{goal} {'met' if met else 'NOT met'}" for goal, met in goals.items())
          + f"; checks: {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
