"""Figures the reliability tests measure (chunks, clients, faults, lost...).

A test calls `record("concurrency [sqlite]", chunks=8000, lost=0)` (name the backend
in the topic when the test runs on both, or the second run replaces the first); at the end of the run
tests/conftest.py prints every topic, and writes them as JSON to the file named
by TURNLOG_FIGURES_FILE when it is set (docs/reliability.md quotes them).
"""
import json
import os

_FIGURES = {}


def record(topic, **numbers):
    """Add `numbers` to `topic` (a later value for the same name replaces the earlier)."""
    _FIGURES.setdefault(topic, {}).update(numbers)


def recorded():
    return {topic: dict(numbers) for topic, numbers in _FIGURES.items()}


def report(write_line):
    """Print the figures, one line per topic; save them when TURNLOG_FIGURES_FILE is set."""
    figures = recorded()
    if not figures:
        return
    write_line("reliability figures:")
    for topic, numbers in sorted(figures.items()):
        write_line(f"  {topic}: " + ", ".join(f"{k}={v}" for k, v in numbers.items()))
    target = os.environ.get("TURNLOG_FIGURES_FILE")
    if target:
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=2, sort_keys=True)
