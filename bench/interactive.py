"""`turnlog run --interactive`: from a command on the command stream to its line on the
agent's stdin, and to its acknowledgement.

    .venv/bin/python bench/interactive.py [--inputs N (200)] [--interval S (0.01)]

A real `turnlog run --interactive` process against the fake turnlog server of
tests/fake_control_server.py (the control routes of docs/control.md, SSE), driving
tests/fake_claude_stdio.py (Claude's stream-json stdin/stdout protocol), which notes when
it reads each stdin line. The server notes when it writes each command on the stream and
when its ack comes. N inputs, one every S seconds; prints p50 / p99 / max in ms.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_control_server import control_server  # noqa: E402

TURNLOG = Path(sys.executable).parent / "turnlog"
AGENT = [sys.executable, str(ROOT / "tests" / "fake_claude_stdio.py")]


def percentiles(values):
    ordered = sorted(values)
    return {"p50": statistics.median(ordered) * 1000,
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            "max": ordered[-1] * 1000}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.01)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, control_server() as fake:
        folder = Path(folder)
        (folder / "token").write_text("tlr_bench\n")
        log = folder / "agent.log"
        proc = subprocess.Popen(
            [TURNLOG, "run", "--server", fake.base, "--token-file", str(folder / "token"),
             "--spool", str(folder / "spool"), "--interactive", "--driver", "claude", "--",
             *AGENT], env=dict(os.environ, FAKE_AGENT_LOG=str(log)), stderr=subprocess.DEVNULL)
        state = fake.state
        state.wait(lambda: state.attached, what="the attach")
        ids = {}
        for n in range(options.inputs):
            ids[state.push("input", input_id=n, uuid=f"bench-{n}", content=f"input {n}")] = n
            time.sleep(options.interval)
        state.wait(lambda: all(i in state.acks for i in ids), timeout=120, what="every ack")
        acked_at = dict(state.acked_at)
        state.push("stop", requested_by="bench")
        proc.wait(60)
        read_at = {}
        for text in log.read_text().splitlines():
            record = json.loads(text)
            if "line" in record and str(record["line"].get("uuid", "")).startswith("bench-"):
                read_at[int(record["line"]["uuid"].split("-")[1])] = record["at"]
        to_stdin = [read_at[n] - state.pushed_at[i] for i, n in ids.items()]
        to_ack = [acked_at[i] - state.pushed_at[i] for i in ids]
    for name, values in (("command -> agent's stdin", to_stdin), ("command -> ack stored", to_ack)):
        figures = percentiles(values)
        print(f"{name}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in figures.items())
              + f" ({len(values)} inputs)")


if __name__ == "__main__":
    main()
