"""What ingest writes to disk per line, against bench/ingest.py's floor (Linux only).

    .venv/bin/python bench/ingest_io.py [--events N (5000)] [--batch B ...]

Reads the process's write counters (/proc/self/io: bytes handed to write calls and
the number of calls, its checkpoint thread included) around bench/ingest.py's floor
(raw sqlite3, one COMMIT per row) and around its `bench_service` at each batch size
(`ingest_output` calls; the app's start-up and migrations, a few hundred KiB, are
in the count too), and prints them per line. Together with bench/ingest_instructions.py (CPU work per
line) it says which of the two a ratio in bench/ingest.py is bound by: a service
that writes less than the floor per line but runs at a fraction of its rate is
paying in CPU.
"""
import argparse
import sys
import tempfile
from pathlib import Path

from ingest import bench_baseline
from ingest import bench_service
from ingest import claude_lines

IO_FILE = Path("/proc/self/io")


def write_counters():
    """(bytes passed to write calls, write calls) of this process so far."""
    fields = dict(line.split(": ") for line in IO_FILE.read_text().splitlines())
    return int(fields["wchar"]), int(fields["syscw"])


def per_line(run, count):
    """(bytes written, write calls) per line while `run()` runs."""
    before = write_counters()
    run()
    after = write_counters()
    return (after[0] - before[0]) / count, (after[1] - before[1]) / count


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000, help="lines to ingest (N)")
    parser.add_argument("--batch", type=int, action="append", help="lines per call (100, 1)")
    args = parser.parse_args()
    if not IO_FILE.exists():
        parser.error(f"{IO_FILE} is not there: this measure needs Linux")
    lines = claude_lines(args.events)
    rows = []
    with tempfile.TemporaryDirectory(prefix="turnlog-io-") as tmp:
        rows.append(("floor: raw sqlite3, 1 COMMIT/row", per_line(
            lambda: bench_baseline(str(Path(tmp) / "floor.sqlite"), lines), len(lines))))
        for batch in args.batch or [100, 1]:
            url = f"sqlite:///{Path(tmp) / f'batch{batch}.sqlite'}"
            rows.append((f"service, batch {batch}", per_line(
                lambda: bench_service(url, lines, batch), len(lines))))
    print(f"{args.events} lines, avg {sum(map(len, lines)) / len(lines):.0f} B/line\n")
    print(f"{'run':<36}{'bytes written/line':>20}{'write calls/line':>18}")
    for name, (written, calls) in rows:
        print(f"{name:<36}{written:>20,.0f}{calls:>18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
