"""Where an ingest request's time goes: bench/ingest.py's stream, one batch size, with
timers around the parts of `ingest_output`.

    .venv/bin/python bench/ingest_parts.py [--events N (10000)] [--batch B (1)]

Prints microseconds per line for each part (a part's time includes the parts it
calls: `_transcribe` holds parsing, `_write`, the part inserts). Each timer adds
well under a microsecond a call, so the parts add up to a little more than the
untimed rate bench/ingest.py reports; use this to see what to work on, and
bench/ingest.py for the figures.
"""
import argparse
import collections
import functools
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest import bench_service  # noqa: E402
from ingest import claude_lines  # noqa: E402

from app.formats import event_lines  # noqa: E402
from app.formats import fast_json  # noqa: E402
from app.services import ingest  # noqa: E402
from app.storage.repositories.outputs import OutputRepository  # noqa: E402
from app.storage.repositories.sessions import SessionRepository  # noqa: E402
from app.storage.repositories.turn_states import TurnStateRepository  # noqa: E402
from app.storage.unit_of_work import EngineUnitOfWork  # noqa: E402
from app.transcript.accumulator import Accumulator  # noqa: E402
from app.transcript.live_events import LiveEvents  # noqa: E402

PARTS = [
    (EngineUnitOfWork, "__enter__", "unit of work: begin"),
    (EngineUnitOfWork, "commit", "unit of work: commit"),
    (EngineUnitOfWork, "__exit__", "unit of work: close"),
    (ingest, "_locked_for_write", "session lock (+ turn header parsed)"),
    (ingest, "_transcribe", "transcription, all of it"),
    (Accumulator, "feed_unless_repeat", "  accumulate"),
    (LiveEvents, "for_line", "  live events"),
    (event_lines, "encode", "  live events encoded"),
    (ingest, "_write", "  closed turns' rows"),
    (TurnStateRepository, "append_parts", "  open turn's parts saved"),
    (OutputRepository, "add_many", "buffer insert"),
    (SessionRepository, "record_ingest", "final UPDATE (+ turn header written)"),
    (fast_json, "loads", "JSON read, anywhere"),
    (fast_json, "dumps", "JSON written, anywhere"),
]


def timed(spent, label, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
    return wrapper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    logging.disable(logging.INFO)
    spent = collections.Counter()
    for owner, name, label in PARTS:
        setattr(owner, name, timed(spent, label, getattr(owner, name)))
    # The provider's parser is looked up per request: time the one it returns.
    get_parser = ingest.get_parser
    ingest.get_parser = lambda provider: timed(spent, "  parse", get_parser(provider))

    lines = claude_lines(args.events)
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        rate, _ = bench_service(f"sqlite:///{Path(tmp) / 'parts.sqlite'}", lines, args.batch)
    print(f"{args.events} lines, batch {args.batch}: {rate.wall:,.0f} lines/s,"
          f" {1e6 / rate.wall:.1f} us a line with the timers on\n")
    order = [label for _, _, label in PARTS] + ["  parse"]
    for label in sorted(order, key=order.index):
        print(f"{label:<40}{spent[label] * 1e6 / args.events:>9.1f} us/line")


if __name__ == "__main__":
    main()
