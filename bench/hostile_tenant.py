"""One hostile tenant among normal ones: their ingest latency while it posts the 118 KiB result.

    .venv/bin/python bench/hostile_tenant.py [--seconds S (10)] [--rounds R (3)]
        [--tenants T (4)] [--think MS (10)] [--attacks N (0: until the phase ends)]
        [--attack-every S (0.2)] [--attack-timeout S (40)] [--control] [--postgres URL]

Each round serves a fresh migrated database (a SQLite file, or a new schema of the
PostgreSQL database at --postgres URL, postgresql+psycopg://...) with gunicorn on a
free loopback port (gunicorn.conf.py, its default worker class, 2 workers;
tests/servers.py starts it), authentication on. T normal tenants and one attacker
each get a runner token of their own (`create-runner-token --machine M --user U`)
and open their sessions with it, posting with each session's write token.

A normal tenant posts bench/ingest.py's Claude stream-json lines (10-line turns,
each closed by a result line) in a closed loop: one line, then five, then one...,
waiting MS between requests, each request timed from send to answer on a kept-alive
connection. Phase A (baseline): the normal tenants alone for S seconds, each on a new
session. Phase B (attack): the same, on new sessions, plus the attacker, who opens
a Bash call (`tool_use`, one request) and then posts its result, the issue's
`"1 passed in 0.2s\\n" + 60000 * "\\n"` (118 KiB, a `tool_result` of that Bash
call, so evidence and its test summary read it), with the result line that closes
the turn (one request, the one timed), again and again. After S seconds the
attacker starts no new attack, and phase B lasts until its last one is answered
(at most --attack-timeout seconds): the normal tenants are timed all through it.
With --control, a phase C is the same with a benign result of the same size (a
`pytest -v` output) in place of the attack: what 118 KiB every 0.2 s cost the
others whatever the text (B and C alternate in order from round to round).

p99* is the p99 corrected for coordinated omission: a closed loop stalled for 30 s
records one slow request where a runner would have had hundreds of lines waiting.

Goals (issue 29): the attack request answers in < 100 ms, and the normal tenants'
p99 in B is that of A (a B/A ratio near 1; compare it with how much A's p99
moves between rounds). Prints each round and the medians of the rounds.

The code of before (07154fe) took 28.8 s per attack request on the issue's
machine, holding SQLite's write lock: run this script from a checkout of that
code (copy it into its bench/ folder) with --attacks 1 to time one attack and the
normal tenants around it.

Stops gunicorn (and drops the schema) on its own: at the end, on an error, on
Ctrl-C, on SIGTERM, and after a time limit from the options (about 2 minutes
with the defaults).
"""
import argparse
import http.client
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest  # noqa: E402
import stream  # noqa: E402

from tests import claude_lines as cl  # noqa: E402
from tests import servers  # noqa: E402

ATTACK_RESULT = "1 passed in 0.2s\n" + 60000 * "\n"


def benign_result():
    """A `pytest -v` output as long as the attack once in JSON (118 KiB): the control."""
    size = len(json.dumps(ATTACK_RESULT))
    lines, at = [], 0
    while len(json.dumps("".join(lines))) < size - 100:
        lines.append(f"tests/test_app.py::test_case_{at:05d} PASSED\n")
        at += 1
    return "".join(lines) + f"===== {at} passed in 0.2s =====\n"


BENIGN_RESULT = benign_result()
SESSIONS = "/api/remote/sessions"
BATCHES = (1, 5)  # lines per request, in turn
LINES = 40_000  # enough for a tenant's phase at any speed this machine reaches
GOAL_MS = 100
ATTACKERS = {"B": "attack (118 KiB hostile)", "C": "control (118 KiB pytest -v)"}
NAN = float("nan")
IDLE_SECONDS = 3  # gunicorn.conf.py's keepalive is 5 s


class Poster:
    """One kept-alive connection to the server with one bearer token."""

    def __init__(self, base, token, timeout):
        address = urlsplit(base)
        self.host, self.port, self.timeout = address.hostname, address.port, timeout
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        self.conn, self.used_at = None, 0.0

    def post(self, path, body):
        """(status, decoded body or None, ms); status 0 when no answer came. Never sent
        twice: a connection idle for longer than gunicorn keeps one (5 s) is replaced
        before the request, not retried after."""
        data = json.dumps(body).encode()
        if time.monotonic() - self.used_at > IDLE_SECONDS:
            self.close()
        began = time.perf_counter()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.conn.request("POST", path, data, self.headers)
            response = self.conn.getresponse()
            status, raw = response.status, response.read()
            self.used_at = time.monotonic()
        except (OSError, http.client.HTTPException):
            self.close()
            return 0, None, (time.perf_counter() - began) * 1000
        elapsed = (time.perf_counter() - began) * 1000
        try:
            return status, json.loads(raw), elapsed
        except ValueError:
            return status, None, elapsed

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Tenant:
    """A runner token's user: opens a session per phase and posts into it."""

    def __init__(self, base, name, runner_token, timeout=60):
        self.base, self.name, self.timeout = base, name, timeout
        self.runner = Poster(base, runner_token, timeout)
        self.writer = self.sid = None
        self.seq = 0

    def open_session(self):
        status, body, _ = self.runner.post(SESSIONS, {"session_type": "agent", "provider": "claude",
                                                      "user_id": self.name})
        if status != 201:
            raise RuntimeError(f"{self.name}: opening a session answered {status}: {body}")
        self.sid = body["session"]["session_id"]
        if self.writer is not None:
            self.writer.close()
        self.writer = Poster(self.base, body.get("write_token") or "", self.timeout)
        self.seq = 0

    def post_lines(self, lines):
        """(status, ms) of one output request carrying `lines`."""
        chunks = [{"seq": self.seq + i, "stream": "stdout", "data": line}
                  for i, line in enumerate(lines)]
        status, _, ms = self.writer.post(f"{SESSIONS}/{self.sid}/output", {"chunks": chunks})
        if status == 200:
            self.seq += len(lines)
        return status, ms

    def close(self):
        self.runner.close()
        if self.writer is not None:
            self.writer.close()


def normal_loop(tenant, lines, think, stop, timings):
    """Post `lines` 1, 5, 1, 5... at a time until `stop`; (ms, status) into `timings`."""
    at, turn = 0, 0
    while not stop.is_set() and at < len(lines):
        size = BATCHES[turn % len(BATCHES)]
        status, ms = tenant.post_lines(lines[at:at + size])
        timings.append((ms, status))
        if status == 200:
            at, turn = at + size, turn + 1
        stop.wait(think)


def attack_loop(tenant, text, attacks, every, stop, timings):
    """Every `every` seconds open a Bash call, then post `text` as its result with the
    turn's result line (timed, into `timings`), until `stop` or `attacks` attacks
    (0: no limit)."""
    done, began = 0, time.monotonic()
    while not stop.is_set() and (attacks == 0 or done < attacks):
        if stop.wait(max(0.0, began + done * every - time.monotonic())):
            return
        tool_id = f"toolu_attack_{done:05d}"
        opening = [cl.assistant(cl.tool_use(tool_id, "Bash", {"command": "pytest -q"}))]
        if tenant.seq == 0:
            opening.insert(0, cl.system_init())
        status, _ = tenant.post_lines(opening)
        if status != 200:
            timings.append((NAN, status))
            stop.wait(0.5)
            continue
        status, ms = tenant.post_lines([cl.tool_result(tool_id, text), cl.result()])
        timings.append((ms, status))
        done += 1


def run_phase(tenants, attacker, lines, args, text=ATTACK_RESULT):
    """(normal tenants' timings, attacker's timings, seconds) of one phase."""
    stop, attack_stop = threading.Event(), threading.Event()
    normal, attacks = [], []
    for tenant in tenants + ([attacker] if attacker else []):
        tenant.open_session()
    threads = [threading.Thread(target=normal_loop, daemon=True,
                                args=(t, lines, args.think / 1000, stop, normal)) for t in tenants]
    if attacker:
        threads.append(threading.Thread(target=attack_loop, daemon=True,
                                        args=(attacker, text, args.attacks, args.attack_every,
                                              attack_stop, attacks)))
    began = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        time.sleep(args.seconds)
        attack_stop.set()
        if attacker:  # the normal tenants go on while the last attack is answered
            threads[-1].join(args.attack_timeout)
    finally:
        stop.set()
        attack_stop.set()
        for thread in threads:
            thread.join(args.attack_timeout + 5)
    return normal, attacks, time.perf_counter() - began


def figures(timings, seconds, interval=None):
    """p50, p99, max (ms), requests/s and failed of (ms, status) timings over `seconds`;
    a failed request counts with its time (one the server dropped took that long to
    fail). With `interval` (ms), p99* as well: the p99 with the requests a tenant would
    have sent, one per `interval`, while it waited for a slow answer (each answer of
    L ms stands for L, L - interval, L - 2 interval... down to `interval`): a closed
    loop stalled for 30 s records one slow request, not the hundreds that waited."""
    times = sorted(ms for ms, _ in timings if ms == ms)
    found = {"p50": NAN, "p99": NAN, "p99*": NAN, "max": NAN,
             "req/s": len(times) / seconds, "failed": sum(status != 200 for _, status in timings)}
    if times:
        found.update(p50=statistics.median(times), p99=p99(times), max=times[-1])
    if times and interval:
        waited = [late for ms in times for late in _stood_for(ms, interval)]
        found["p99*"] = p99(sorted(times + waited))
    return found


def _stood_for(ms, interval):
    late = ms - interval
    while late >= interval:
        yield late
        late -= interval


def p99(times):
    return statistics.quantiles(times, n=100, method="inclusive")[98] if len(times) > 1 else times[0]


def new_tokens(server, count):
    """A runner token per tenant (tenant-0..), each for its own machine and user."""
    def one(i):
        return server.new_token("create-runner-token", "--machine", f"bench-machine-{i}",
                                "--user", f"tenant-{i}")
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def one_round(number, lines, args):
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="turnlog-bench-tenants-"))
        url = stack.enter_context(stream.database(args.postgres, tmp, "tenants"))
        server = stack.enter_context(servers.gunicorn(tmp, database_url=url, auth=True))
        tokens = new_tokens(server, args.tenants + 1)
        tenants = [Tenant(server.base, f"tenant-{i}", token) for i, token in enumerate(tokens[:-1])]
        attacker = Tenant(server.base, f"tenant-{args.tenants}", tokens[-1], args.attack_timeout)
        for tenant in tenants + [attacker]:
            stack.callback(tenant.close)
        # Warm-up, not counted: every worker has served a few requests.
        run_phase(tenants, None, lines, argparse.Namespace(**{**vars(args), "seconds": 1}))
        a, _, a_seconds = run_phase(tenants, None, lines, args)
        phases = [("B", ATTACK_RESULT)] + ([("C", BENIGN_RESULT)] if args.control else [])
        if number % 2 == 0:  # B and C alternate in order, so drift in the load cancels out
            phases.reverse()
        after = {name: run_phase(tenants, attacker, lines, args, text) for name, text in phases}
    # What a tenant's loop would take per request were nothing slow: its wait, and
    # the median answer of phase A.
    interval = args.think + statistics.median(ms for ms, _ in a)
    result = {"A normal": figures(a, a_seconds, interval)}
    for name, (normal, attacks, seconds) in sorted(after.items()):
        result[f"{name} normal"] = figures(normal, seconds, interval)
        result[ATTACKERS[name]] = figures(attacks, seconds)
    ratios = {f"{name}/A {column}": result[f"{name} normal"][column] / result["A normal"][column]
              for name in sorted(after) for column in ("p99", "p99*")}
    result["ratios"] = ratios
    seconds = ", ".join(f"{name} {value[-1]:.1f} s" for name, value in
                        sorted({"A": (a_seconds,), **after}.items()))
    print(table(f"round {number} ({seconds})", result), flush=True)
    return result


def table(title, result):
    columns = list(result["A normal"])
    rows = [f"{title:<40}" + "".join(f"{name:>10}" for name in columns)]
    for name, found in result.items():
        if name != "ratios":
            rows.append(f"  {name:<38}" + "".join(cell(c, found[c]) for c in columns))
    rows.append("  normal tenants: " + ", ".join(f"{name} {value:.2f}"
                                                 for name, value in result["ratios"].items()))
    return "\n".join(rows)


def cell(column, value):
    if value != value:
        return f"{'-':>10}"
    return f"{value:>10.0f}" if column in ("req/s", "failed") else f"{value:>10.1f}"


def medians(results):
    found = {}
    for key, value in results[0].items():
        if isinstance(value, dict):
            found[key] = {name: statistics.median(r[key][name] for r in results) for name in value}
        else:
            found[key] = statistics.median(r[key] for r in results)
    return found


def stop_on_signal(signum, _frame):
    raise SystemExit(f"bench/hostile_tenant.py: stopped by signal {signum}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="length of each phase (S)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; their medians are printed")
    parser.add_argument("--tenants", type=int, default=4, help="normal tenants (T)")
    parser.add_argument("--think", type=float, default=10,
                        help="ms a normal tenant waits between its requests")
    parser.add_argument("--attacks", type=int, default=0,
                        help="attacks per round (0: as many as fit in the phase)")
    parser.add_argument("--attack-every", type=float, default=0.2,
                        help="seconds from the start of one attack to the next (0: back to back)")
    parser.add_argument("--attack-timeout", type=float, default=40,
                        help="seconds an attack request may take before it counts as failed")
    parser.add_argument("--control", action="store_true",
                        help="a phase C as well: B's attacker posting a benign result of the same size")
    parser.add_argument("--postgres", default=None, metavar="URL",
                        help="a PostgreSQL URL (postgresql+psycopg://...); default: SQLite files")
    args = parser.parse_args()
    attacked = 2 if args.control else 1
    limit = int(args.rounds * ((1 + attacked) * args.seconds + attacked * args.attack_timeout
                               + 45)) + 30
    # SystemExit, not a kill: the context managers still stop gunicorn and drop the schema.
    signal.signal(signal.SIGALRM, stop_on_signal)
    signal.signal(signal.SIGTERM, stop_on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started ignoring it
    signal.alarm(limit)
    backend = ingest.backend_name(args.postgres)
    print(f"{backend}; {args.tenants} normal tenants (1 and 5 lines a request, {args.think:g} ms"
          f" between), 1 attacker (118 KiB Bash result every {args.attack_every:g} s);"
          f" phases of {args.seconds:g} s; {args.rounds} round(s); stops after {limit} s at most",
          flush=True)
    lines = ingest.claude_lines(LINES)
    results = [one_round(n + 1, lines, args) for n in range(args.rounds)]
    summary = medians(results)
    if args.rounds > 1:
        print(table(f"median of {args.rounds} rounds", summary))
    attack = summary[ATTACKERS["B"]]
    met = attack["p99"] < GOAL_MS and not attack["failed"]
    ratios = summary["ratios"]
    print(f"goal: attack request < {GOAL_MS} ms at p99 {'met' if met else 'NOT met'};"
          f" normal tenants' p99 B/A {ratios['B/A p99']:.2f}, p99* {ratios['B/A p99*']:.2f}"
          " (unchanged: about 1" + (f", or C/A {ratios['C/A p99']:.2f})" if args.control else ")"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # gunicorn is stopped by then
        sys.exit("bench/hostile_tenant.py: interrupted")
