"""Cost per request as one turn grows: the open turn is saved append-only, so the
last requests of a long run should cost about what the first ones did.

    .venv/bin/python bench/long_turn.py [--requests R] [--output-kb K] [--codex]

One autonomous session (it keeps every tool result), one turn that never closes
until the end: each request posts an assistant line (text + tool_use) and a
tool_result of K KiB, as a long `claude -p` run does. With --codex, a Codex
session instead: each request restates one long-running command (item.updated,
its K KiB output rewritten in place) and completes a new command item.
"""
import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

from app import create_app
from app import db
from app.core.records import Chunk
from app.extensions import db as sqla
from app.services import sessions
from app.services.ingest import ingest_output

WINDOW = 50  # requests averaged at each end


def request_lines(n, output):
    assistant = {"type": "assistant", "uuid": f"a-{n}", "message": {
        "id": f"msg_{n}", "role": "assistant",
        "content": [{"type": "text", "text": f"Step {n}."},
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                     "input": {"command": f"cat part{n}.txt"}}]}}
    result = {"type": "user", "uuid": f"u-{n}", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output}]}}
    return [json.dumps(assistant), json.dumps(result)]


def codex_item(event, item_id, output, status):
    exit_code = None if status == "in_progress" else 0
    return json.dumps({"type": f"item.{event}", "item": {
        "id": item_id, "type": "command_execution", "command": "make", "status": status,
        "aggregated_output": output, "exit_code": exit_code}})


def codex_request_lines(n, output):
    return [codex_item("updated", "item_0", f"{n}{output}", "in_progress"),
            codex_item("completed", f"item_{n + 1}", output, "completed")]


CODEX_OPENING = [json.dumps({"type": "turn.started"}),
                 codex_item("started", "item_0", "", "in_progress")]
CODEX_CLOSING = [codex_item("completed", "item_0", "done", "completed"),
                 json.dumps({"type": "turn.completed"})]
CLAUDE_CLOSING = [json.dumps({"type": "result", "uuid": "r-end"})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--output-kb", type=int, default=20)
    parser.add_argument("--codex", action="store_true", help="a Codex turn of restated items")
    args = parser.parse_args()
    output = "y" * (args.output_kb * 1024)
    lines_of = codex_request_lines if args.codex else request_lines
    opening, closing = (CODEX_OPENING, CODEX_CLOSING) if args.codex else ([], CLAUDE_CLOSING)
    timings = []
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'long.sqlite'}"})
        with app.app_context():
            db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            data = {"session_type": "workflow", "context": {"workflow_id": "bench"},
                    "provider": "codex" if args.codex else "claude"}
            sid = sessions.open_session(data, db.writing()).session_id
            seqs = itertools.count()
            if opening:
                post(sid, opening, seqs)
            for n in range(args.requests):
                start = time.perf_counter()
                post(sid, lines_of(n, output), seqs)
                timings.append(time.perf_counter() - start)
            start = time.perf_counter()
            receipt = post(sid, closing, seqs)
            flush = time.perf_counter() - start
            sqla.session.remove()
            sqla.engine.dispose()

    first = sum(timings[:WINDOW]) / WINDOW * 1000
    last = sum(timings[-WINDOW:]) / WINDOW * 1000
    kind = "Codex items restated" if args.codex else "Claude lines"
    print(f"{args.requests} requests into one open turn ({kind}), {args.output_kb} KiB tool"
          " output each")
    print(f"first {WINDOW} requests: {first:.2f} ms/request")
    print(f"last {WINDOW} requests:  {last:.2f} ms/request   (last/first = {last / first:.2f})")
    print(f"closing the turn ({2 * args.requests} lines, one row): {flush * 1000:.1f} ms")
    return 0 if receipt.messages_written == 1 else 1


def post(session_id, lines, seqs):
    chunks = [Chunk(line, "stdout", next(seqs)) for line in lines]
    return ingest_output(session_id, chunks, db.writing(), retention_seconds=86400)


if __name__ == "__main__":
    sys.exit(main())
