"""Ingest cost in CPU instructions per line: bench/ingest.py's stream and batch sizes,
counted by valgrind (cachegrind), this checkout against another revision.

    .venv/bin/python bench/ingest_instructions.py [--against REV] [--batch B ...] [--events N]
    .venv/bin/python bench/ingest_instructions.py --parts [--events N]

Wall-clock rates on a shared machine move by a third from one minute to the next;
an instruction count does not. Each figure is the difference between two runs of
`bench_service` (N and 3N lines, read from a file, so making the lines is not
counted) over the extra 2N lines: the per-line cost of ingest, SQLite's own C code
and the WAL checkpoints included, the start-up excluded. What it leaves out is the
time the kernel spends writing the log, which bench/ingest.py's floor and rates
include. `--against REV` checks REV out in a temporary worktree and counts it the
same way (its bench/ingest.py must have `bench_service(url, lines, batch)`).
`--parts` counts the per-line pipeline of this checkout without the database, its
parts switched on one at a time (PARTS), and prints what each adds.
Needs valgrind (Debian: apt-get install valgrind).
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ingest import claude_lines

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, tempfile
tree, path, count, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path[:0] = [tree, tree + "/bench"]
from ingest import bench_service
with open(path, encoding="utf-8") as handle:
    lines = handle.read().split("\\n")[:count]
with tempfile.TemporaryDirectory() as tmp:
    bench_service(f"sqlite:///{tmp}/bench.sqlite", lines, batch)
"""
# The per-line pipeline of `_transcribe` without the database: parts 1..upto of PARTS.
PIPELINE = """
import sys
tree, path, count, upto = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path[:0] = [tree]
from app.core.records import StoredOutput
from app.formats import event_lines
from app.formats.output_frames import event_json
from app.providers import claude
from app.transcript.accumulator import Accumulator
from app.transcript.evidence import EvidenceLines
from app.transcript.flush_policy import policy_for
from app.transcript.live_events import LiveEvents
from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.turns import Turn
with open(path, encoding="utf-8") as handle:
    lines = handle.read().split("\\n")[:count]
stamp = "2026-01-01T00:00:00.000000Z"
accumulator, evidence, live = Accumulator(), EvidenceLines(), LiveEvents()
policy = policy_for("agent", {})
for index, line in enumerate(lines):
    if upto < 1:
        continue
    out = StoredOutput(index, "stdout", line, index, stamp)
    event = claude.parse_line(out.payload)
    if upto < 2:
        continue
    closed = None
    for outcome in accumulator.feed_unless_repeat(event, index, stamp, line):
        if isinstance(outcome, Turn):
            closed = TranscriptTurn.from_turn(outcome)
            if upto >= 3:
                policy.draft(closed)
            if upto >= 4:
                evidence.take(closed)
    if upto >= 4:
        evidence.observe(event, index)
    if upto >= 5:
        events = live.for_line(event, index, stamp, accumulator.buffer, closed,
                               accumulator.usage_changed)
    if upto >= 6:
        event_lines.encode(events)
    if upto >= 7:
        event_json(out.event_index, out.stream, out.payload, out.created_at)
    accumulator.buffer.parts.clear()  # the open turn's parts go to the database
"""
PARTS = ["a stored output and its line parsed", "accumulated (and closed turns normalized)",
         "the flush policy's drafts", "the evidence", "the live events",
         "the live events encoded", "the output event's JSON"]
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(tree, lines_file, count, batch, child=CHILD):
    """Instructions valgrind counts for one child run of `count` lines (`batch`: the
    child's fourth argument)."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", child, str(tree), str(lines_file), str(count), str(batch)],
        capture_output=True, text=True, check=True)
    return int(REFS.search(done.stderr)[1].replace(",", ""))


def per_line(tree, lines_file, events, batch, child=CHILD):
    """Instructions per line: the runs of `events` and 3 x `events` lines, differenced."""
    return (instructions(tree, lines_file, 3 * events, batch, child)
            - instructions(tree, lines_file, events, batch, child)) / (2 * events)


def print_parts(lines_file, events):
    """What each part of the per-line pipeline adds, in instructions per line."""
    print(f"per-line pipeline without the database (runs of {events} and {3 * events} lines)\n")
    before = per_line(ROOT, lines_file, events, 0, PIPELINE)
    total = 0
    for upto, name in enumerate(PARTS, 1):
        now = per_line(ROOT, lines_file, events, upto, PIPELINE)
        print(f"{name:<46}{now - before:>10,.0f}")
        total, before = total + now - before, now
    print(f"{'in all':<46}{total:>10,.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a git revision to count as well (e.g. a294337)")
    parser.add_argument("--batch", type=int, action="append", help="lines per call (100, 1)")
    parser.add_argument("--events", type=int, default=1000,
                        help="N: runs of N and 3N lines (default 1000)")
    parser.add_argument("--parts", action="store_true",
                        help="the per-line pipeline's parts instead (this checkout)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    batches = args.batch or [100, 1]
    with tempfile.TemporaryDirectory(prefix="turnlog-instructions-") as tmp:
        lines_file = Path(tmp) / "lines.jsonl"
        lines_file.write_text("\n".join(claude_lines(3 * args.events)), encoding="utf-8")
        if args.parts:
            print_parts(lines_file, args.events)
            return 0
        trees = {"this checkout": ROOT}
        if args.against:
            other = Path(tmp) / "against"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other),
                            args.against], check=True, capture_output=True)
            trees[args.against] = other
        try:
            counts = {(name, batch): per_line(tree, lines_file, args.events, batch)
                      for name, tree in trees.items() for batch in batches}
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(trees[args.against])], check=False, capture_output=True)
    print(f"instructions per line ingested (runs of {args.events} and {3 * args.events} lines)\n")
    print(f"{'code':<20}" + "".join(f"{f'batch {b}':>16}" for b in batches))
    for name in trees:
        print(f"{name:<20}" + "".join(f"{counts[(name, b)]:>16,.0f}" for b in batches))
    if args.against:
        print(f"\n{args.against} / this checkout: " + ", ".join(
            f"batch {b} {counts[(args.against, b)] / counts[('this checkout', b)]:.2f}x"
            for b in batches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
