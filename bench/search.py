"""Search on hostile rows: time to answer against the database's bare match.

    .venv/bin/python bench/search.py [--rows R] [--size BYTES] [--repeat N] [--database-url URL]

R transcript rows (default 8) of about BYTES characters each (default 5,000,000) in
which the searched word occurs about 3.5% of the time (some 28,000 matches per 5 MB
row), the rows a probe used to hold a worker for a minute. Each query goes through
GET /api/remote/sessions/search (the Flask test client: routing, auth off, service,
repository, JSON), with limit 1 and limit 100, repeated N times; the median and the
worst are printed. The floor is the bare match with no snippet (FTS5 MATCH, ids
only, newest first) on the raw sqlite3 driver over the same file. Goal: under 1 s.

With --database-url postgresql+psycopg://... the rows go to a new schema there,
dropped afterwards, and the floor is skipped (it is SQLite's).
"""
import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ingest.py

import ingest  # noqa: E402

from app import create_app  # noqa: E402
from app import db  # noqa: E402
from app.core.records import Chunk  # noqa: E402
from app.extensions import db as sqla  # noqa: E402
from app.services import sessions  # noqa: E402
from app.services.ingest import ingest_output  # noqa: E402
from tests import claude_lines as cl  # noqa: E402

WORD = "needle"
FILLER = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]


def hostile_text(seed, size):
    rng = random.Random(seed)
    words, length = [], 0
    while length < size:
        word = WORD if rng.random() < 0.035 else rng.choice(FILLER)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def fill(app, rows, size):
    """One session per row, each a single text turn; returns the matches per row."""
    with app.app_context():
        db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
        for seed in range(rows):
            text = hostile_text(seed, size)
            sid = sessions.open_session({"session_type": "agent"}, db.writing()).session_id
            lines = [cl.assistant(cl.text(text)), cl.result()]
            ingest_output(sid, [Chunk(line, "stdout", i) for i, line in enumerate(lines)],
                          db.writing(), retention_seconds=86400)
        sqla.session.remove()
    return text.split().count(WORD)


def time_search(client, limit, repeat):
    """Seconds per GET, one per repeat; checks every answer is a full page with snippets."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get("/api/remote/sessions/search", query_string={"q": WORD, "limit": limit})
        seconds.append(time.perf_counter() - start)
        assert response.status_code == 200, response.get_json()
        hits = response.get_json()["results"]
        assert hits and all(f"**{WORD}**" in hit["snippet"] for hit in hits), hits[:1]
    return seconds


def time_floor(path, limit, repeat):
    conn = sqlite3.connect(path)
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        conn.execute("SELECT rowid FROM session_messages_fts WHERE session_messages_fts MATCH ?"
                     " ORDER BY rowid DESC LIMIT ?", (f'"{WORD}"', limit)).fetchall()
        seconds.append(time.perf_counter() - start)
    conn.close()
    return seconds


def run(url, args, sqlite_path=None):
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "AUTH_DISABLED": True,
                      "SEARCH_TIMEOUT_SECONDS": 600,  # measure the work, not the budget
                      "LOG_LEVEL": "WARNING"})
    start = time.perf_counter()
    matches = fill(app, args.rows, args.size)
    print(f"{args.rows} rows of {args.size:,} characters, ~{matches:,} matches each,"
          f" stored in {time.perf_counter() - start:.1f} s")
    client = app.test_client()
    for limit in (1, 100):
        seconds = time_search(client, limit, args.repeat)
        line = (f"limit={limit:<3} answer median {statistics.median(seconds) * 1000:8.1f} ms,"
                f" worst {max(seconds) * 1000:8.1f} ms")
        if sqlite_path:
            floor = statistics.median(time_floor(sqlite_path, limit, args.repeat))
            line += f"   bare match {floor * 1000:.2f} ms"
        print(line)
    with app.app_context():
        sqla.engine.dispose()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--size", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    if args.database_url:
        print(f"backend: {ingest.backend_name(args.database_url)}")
        with ingest.fresh_schema(args.database_url) as url:
            run(url, args)
        return
    print(f"backend: sqlite3 {sqlite3.sqlite_version}")
    with tempfile.TemporaryDirectory(prefix="turnlog-bench-") as tmp:
        path = Path(tmp) / "search.sqlite"
        run(f"sqlite:///{path}", args, sqlite_path=str(path))


if __name__ == "__main__":
    main()
