"""What the evidence migration's backfill costs: one pass over the retained buffer.

    .venv/bin/python bench/evidence_backfill.py [--sessions S] [--events N]

S Claude sessions of N buffered lines each (bench/ingest.py's stream: ~10-line turns,
three Bash calls each) are ingested, their evidence rows deleted, and the backfill
(`app/services/evidence.py`, as `db-upgrade` runs it) timed in one transaction on a
fresh SQLite file. Prints lines read per second and checks it restored every row.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from app import create_app
from app import db
from app.core.records import Chunk
from app.extensions import db as sqla
from app.services import evidence
from app.services import sessions
from app.services.ingest import ingest_output
from app.storage.unit_of_work import repositories_on

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ingest.py

from ingest import claude_lines  # noqa: E402

COLUMNS = "session_id, turn_id, evidence_id, command, exit_code, is_error, output_head, test_summary"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--events", type=int, default=5000, help="buffered lines per session")
    args = parser.parse_args()
    lines = claude_lines(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{Path(tmp) / 'b.sqlite'}"})
        with app.app_context():
            db.upgrade(sqla.engine, app.config["MIGRATIONS_DIR"])
            for _ in range(args.sessions):
                sid = sessions.open_session({"session_type": "agent", "provider": "claude"},
                                            db.writing()).session_id
                chunks = [Chunk(line, "stdout", seq) for seq, line in enumerate(lines)]
                for at in range(0, len(chunks), 100):
                    ingest_output(sid, chunks[at:at + 100], db.writing(), retention_seconds=86400)
            select = text(f"SELECT {COLUMNS} FROM session_evidence ORDER BY session_id, id")
            with sqla.engine.begin() as conn:
                live = conn.execute(select).all()
                conn.execute(text("DELETE FROM session_evidence"))
            start = time.perf_counter()
            with sqla.engine.begin() as conn:
                added = evidence.backfill(repositories_on(conn))
            elapsed = time.perf_counter() - start
            with sqla.engine.connect() as conn:
                restored = conn.execute(select).all()
            sqla.engine.dispose()
    total = args.sessions * len(lines)
    print(f"buffered lines   {total:>10,}")
    print(f"evidence items   {added:>10,}")
    print(f"backfill         {elapsed:>10.2f} s   {total / elapsed:>10,.0f} lines/s")
    same = restored == live
    print(f"restored every row as ingest wrote it: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
