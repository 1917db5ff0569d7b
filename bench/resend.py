"""A Codex stream sent again under new seqs: rows and counters before and after, and
what naming id-less lines by their place costs ingest.

    .venv/bin/python bench/resend.py [--runs R] [--batch B]

R `codex exec` runs of one thread (each a turn of a command, its output and a reply,
a few identical to the run before), ingested B lines per call, then the whole stream
sent again from its start under new seqs. Before issue 15 item 4, such lines were keyed
by their buffer position and the copy wrote every row again.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from app import create_app
from app import db
from app.core.records import Chunk
from app.extensions import db as sqla
from app.services import sessions
from app.services.ingest import ingest_output

THREAD = "0199b0c4-2f6e-7a10-9c3e-000000000001"


def codex_run(n):
    """One run; every fifth run repeats the one before it word for word."""
    n = n - 1 if n % 5 == 4 else n
    command = f"bash -lc 'pytest -q tests/test_{n}.py'"
    return [json.dumps(line) for line in (
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": f"**Run {n}**"}},
        {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": command,
                                          "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": command,
                                            "aggregated_output": f"{n} passed\n", "exit_code": 0,
                                            "status": "completed"}},
        {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": f"{n} passed."}},
        {"type": "turn.completed", "usage": {"input_tokens": 900, "cached_input_tokens": 800,
                                             "output_tokens": 30}},
    )]


def figures(sid):
    row = sqla.session.execute(text(
        "SELECT message_count, conversation_turn_count, transcript_input_tokens FROM agent_sessions"
        " WHERE session_id = :sid"), {"sid": sid}).one()
    rows = sqla.session.execute(text("SELECT count(*) FROM session_messages WHERE session_id = :sid"),
                                {"sid": sid}).scalar_one()
    sqla.session.remove()
    return rows, *row


def post(sid, lines, start, batch):
    began = time.perf_counter()
    for at in range(0, len(lines), batch):
        chunks = [Chunk(line, "stdout", start + at + n) for n, line in enumerate(lines[at:at + batch])]
        ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
    return len(lines) / (time.perf_counter() - began)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="codex exec runs (R)")
    parser.add_argument("--batch", type=int, default=50, help="lines per ingest call (B)")
    args = parser.parse_args()
    lines = [line for n in range(args.runs) for line in codex_run(n)]
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'resend.sqlite'}"})
        with app.app_context():
            db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            sid = sessions.open_session({"session_type": "agent", "provider": "codex"},
                                        db.writing()).session_id
            first_rate = post(sid, lines, 0, args.batch)
            before = figures(sid)
            again_rate = post(sid, lines, len(lines), args.batch)
            after = figures(sid)
            sqla.engine.dispose()
    print(f"{args.runs} runs, {len(lines)} lines, batch {args.batch}\n")
    print(f"{'pass':<18}{'lines/s':>10}{'rows':>8}{'messages':>10}{'turns':>8}{'input tok':>11}")
    for name, rate, (rows, messages, turns, tokens) in (("first", first_rate, before),
                                                        ("sent again", again_rate, after)):
        print(f"{name:<18}{rate:>10,.0f}{rows:>8}{messages:>10}{turns:>8}{tokens:>11}")
    same = before == after
    print(f"\nthe copy added nothing: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
