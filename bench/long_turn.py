"""Cost per request as one turn grows: the open turn is saved append-only, so the
last requests of a long run should cost about what the first ones did.

    .venv/bin/python bench/long_turn.py [--requests R] [--output-kb K]

One autonomous session (it keeps every tool result), one turn that never closes
until the end: each request posts an assistant line (text + tool_use) and a
tool_result of K KiB, as a long `claude -p` run does.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from app import create_app
from app import db
from app.extensions import db as sqla
from app.services import migrations
from app.services import sessions
from app.services.ingest import ingest_output
from app.services.models import Chunk

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--output-kb", type=int, default=20)
    args = parser.parse_args()
    output = "y" * (args.output_kb * 1024)
    timings = []
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'long.sqlite'}"})
        with app.app_context():
            migrations.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            data = {"session_type": "workflow", "context": {"workflow_id": "bench"}}
            sid = sessions.open_session(data, db.writing()).session_id
            for n in range(args.requests):
                chunks = [Chunk(line, "stdout", 2 * n + i)
                          for i, line in enumerate(request_lines(n, output))]
                start = time.perf_counter()
                ingest_output(sid, chunks, db.writing(), retention_seconds=86400)
                timings.append(time.perf_counter() - start)
            start = time.perf_counter()
            tail = [Chunk(json.dumps({"type": "result", "uuid": "r-end"}), "stdout", 2 * n + 2)]
            receipt = ingest_output(sid, tail, db.writing(), retention_seconds=86400)
            flush = time.perf_counter() - start
            sqla.session.remove()
            sqla.engine.dispose()

    first = sum(timings[:WINDOW]) / WINDOW * 1000
    last = sum(timings[-WINDOW:]) / WINDOW * 1000
    print(f"{args.requests} requests into one open turn, {args.output_kb} KiB tool output each")
    print(f"first {WINDOW} requests: {first:.2f} ms/request")
    print(f"last {WINDOW} requests:  {last:.2f} ms/request   (last/first = {last / first:.2f})")
    print(f"closing the turn ({2 * args.requests} lines, one row): {flush * 1000:.1f} ms")
    return 0 if receipt.messages_written == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
