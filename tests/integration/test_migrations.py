"""Migrations run once each, in order, and the CLI reports what it did."""
import json
import re
import shutil
import threading
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlalchemy import text

from app import create_app
from app import db as app_db
from app.core.clock import from_iso
from app.extensions import db
from app.storage import migrations


def migration_files(app):
    """(version, name) of every migration in the folder (a per-database pair is one)."""
    found = set()
    for path in Path(app.config["MIGRATIONS_DIR"]).glob("*.sql"):
        number, name = re.match(r"^(\d{4})_([a-z0-9_]+)(\.sqlite|\.postgresql)?\.sql$",
                                path.name).groups()[:2]
        found.add((int(number), name))
    return sorted(found)


def migrate_through(app, folder, pattern):
    """Copy the migrations matching `pattern` into `folder` and apply them: a database
    as an older release left it, to test what a later migration does to its rows."""
    for path in sorted(Path(app.config["MIGRATIONS_DIR"]).glob(pattern)):
        shutil.copy(path, folder / path.name)
    app_db.upgrade(db.engine, folder)


def migrate_next(app, folder, name):
    """Add migration `name` to `folder` and apply it; returns the versions applied."""
    shutil.copy(Path(app.config["MIGRATIONS_DIR"]) / name, folder)
    return [m.version for m in app_db.upgrade(db.engine, folder)]


def add_old_session(conn, session_id, session_type):
    """A session row with only the columns every schema version has."""
    conn.execute(text(
        "INSERT INTO agent_sessions (session_id, session_type, created_at, updated_at)"
        " VALUES (:session_id, :session_type, 't', 't')"),
        {"session_id": session_id, "session_type": session_type})


def add_old_outputs(conn, session_id, payloads):
    """Buffer rows with only the columns 0003 made, numbered from 0."""
    for index, payload in enumerate(payloads):
        conn.execute(text(
            "INSERT INTO remote_runtime_outputs (session_id, event_index, stream, payload,"
            " producer_seq, created_at, expires_at)"
            " VALUES (:session_id, :index, 'stdout', :payload, :index, 't0', '9999')"),
            {"session_id": session_id, "index": index, "payload": payload})


@pytest.fixture
def fresh_app(database_url):
    """An app on an empty database, nothing migrated, its app context pushed."""
    fresh = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": database_url})
    with fresh.app_context():
        yield fresh
        db.engine.dispose()


def test_schema_migrations_lists_every_file(app, rows):
    files = migration_files(app)
    assert len(files) >= 5
    assert rows("SELECT version, name FROM schema_migrations ORDER BY version") == files


def test_second_upgrade_applies_nothing(app, rows):
    before = rows("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")

    assert app_db.upgrade(db.engine, app.config["MIGRATIONS_DIR"]) == []
    assert rows("SELECT version, name, applied_at FROM schema_migrations"
                " ORDER BY version") == before


def test_upgrade_on_an_empty_database_applies_all_in_order(fresh_app, tmp_path):
    applied = app_db.upgrade(db.engine, fresh_app.config["MIGRATIONS_DIR"])
    again = app_db.upgrade(db.engine, fresh_app.config["MIGRATIONS_DIR"])

    assert [(m.version, m.name) for m in applied] == migration_files(fresh_app)
    assert again == []
    _, pending = migrations.status(db.engine, fresh_app.config["MIGRATIONS_DIR"])
    assert pending == []


def test_every_table_exists_after_upgrade(app):
    with app.app_context():
        tables = set(inspect(db.engine).get_table_names())
    assert {"agent_sessions", "session_messages", "remote_runtime_outputs",
            "usage_report_receipts", "session_turn_parts", "schema_migrations"} <= tables


def test_db_status_lists_every_migration_as_applied(app, runner):
    result = runner.invoke(args=["db-status"])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["applied", f"{version:04d}_{name}"] for version, name in migration_files(app)]


def test_db_upgrade_on_a_migrated_database_says_up_to_date(runner, rows):
    result = runner.invoke(args=["db-upgrade"])

    assert result.exit_code == 0, result.output
    assert result.output.strip() == "database is up to date"
    assert rows("SELECT COUNT(*) FROM schema_migrations") == [(len(migration_files(runner.app)),)]


def test_cli_upgrades_an_empty_database(fresh_app):
    cli = fresh_app.test_cli_runner()
    expected = [f"{version:04d}_{name}" for version, name in migration_files(fresh_app)]

    before = cli.invoke(args=["db-status"])
    upgraded = cli.invoke(args=["db-upgrade"])
    after = cli.invoke(args=["db-status"])

    assert [line.split() for line in before.output.splitlines()] == [
        ["pending", name] for name in expected]
    assert upgraded.output.splitlines() == [f"applied {name}" for name in expected]
    assert [line.split()[:2] for line in after.output.splitlines()] == [
        ["applied", name] for name in expected]


def test_a_failing_migration_leaves_no_trace_and_stops_the_run(fresh_app, tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_create_a.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    (folder / "0002_broken.sql").write_text(
        "CREATE TABLE b (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n")
    (folder / "0003_create_c.sql").write_text("CREATE TABLE c (x INTEGER);\n")

    with pytest.raises(Exception, match="no_such_table"):
        app_db.upgrade(db.engine, folder)

    applied, pending = migrations.status(db.engine, folder)
    assert sorted(applied) == [1]
    assert [m.version for m in pending] == [2, 3]
    tables = set(inspect(db.engine).get_table_names())
    assert "a" in tables and "b" not in tables and "c" not in tables


def test_cli_reports_a_missing_migrations_folder_without_a_traceback(fresh_app, tmp_path):
    fresh_app.config["MIGRATIONS_DIR"] = str(tmp_path / "nowhere")
    result = fresh_app.test_cli_runner().invoke(args=["db-upgrade"])
    assert result.exit_code == 1
    assert "Error:" in result.output and "nowhere" in result.output
    assert "Traceback" not in result.output


def test_0007_backfills_the_turn_counters_of_existing_sessions(fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-6]_*.sql")
    with db.engine.begin() as conn:
        add_old_session(conn, "s1", "workflow")
        for key, role, content in [("turn:a", "assistant", "hi"), ("turn:b", "assistant", ""),
                                   ("turn:c", "system", "Turn failed (error)"),
                                   ("system:@0", "system", "Session started")]:
            conn.execute(text(
                "INSERT INTO session_messages (session_id, role, content, source, turn_key,"
                " timestamp) VALUES ('s1', :role, :content, 'remote_live', :key, 't')"),
                {"role": role, "content": content, "key": key})
    assert migrate_next(fresh_app, tmp_path, "0007_add_turn_counters.sql") == [7]
    with db.engine.connect() as conn:
        counters = conn.execute(text(
            "SELECT conversation_turn_count, visible_message_count, message_count"
            " FROM agent_sessions WHERE session_id = 's1'")).one()
        keys = conn.execute(text("SELECT turn_key FROM session_turns ORDER BY turn_key")).all()
    assert tuple(counters) == (3, 1, 0)
    assert [k for k, in keys] == ["turn:a", "turn:b", "turn:c"]


def test_two_first_upgrades_at_once_apply_each_migration_once(fresh_app):
    engine, folder = db.engine, fresh_app.config["MIGRATIONS_DIR"]
    results, errors = [], []

    def run():
        try:
            results.append([m.version for m in app_db.upgrade(engine, folder)])
        except Exception as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    applied = sorted(v for versions in results for v in versions)
    assert applied == [m.version for m in migrations.discover(folder)]


def test_0010_keeps_existing_buffer_rows_and_replay_builds_their_json(fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-9]_*.sql")
    with db.engine.begin() as conn:
        add_old_session(conn, "s1", "agent")
        add_old_outputs(conn, "s1", ['{"a": "\\"q\\""}', "caf\u00e9\ttab"])
    assert migrate_next(fresh_app, tmp_path, "0010_add_output_frames.sql") == [10]
    with db.engine.connect() as conn:
        kept = conn.execute(text("SELECT event_json FROM remote_runtime_outputs")).all()
    assert kept == [(None,), (None,)]
    with app_db.detached_units_of_work()() as uow:
        replayed, _ = uow.outputs.list_after("s1", -1, 10)
    assert [(index, json.loads(data)) for index, data in replayed] == [
        (index, {"event_index": index, "stream": "stdout", "payload": payload, "created_at": "t0"})
        for index, payload in enumerate(['{"a": "\\"q\\""}', "caf\u00e9\ttab"])]
    assert all("\n" not in data for _, data in replayed)


def test_0016_counts_each_sessions_retained_output_and_knows_no_opener(fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-9]_*.sql")
    migrate_through(fresh_app, tmp_path, "001[0-5]_*.sql")
    with db.engine.begin() as conn:
        add_old_session(conn, "s1", "agent")
        add_old_session(conn, "s2", "agent")
        add_old_outputs(conn, "s1", ["abc", "caf\u00e9"])
    assert migrate_next(fresh_app, tmp_path, "0016_add_session_quotas.sql") == [16]
    with db.engine.connect() as conn:
        counted = conn.execute(text(
            "SELECT session_id, output_bytes, opened_by_token FROM agent_sessions ORDER BY session_id")).all()
    assert [tuple(row) for row in counted] == [("s1", 7, None), ("s2", 0, None)]  # characters retained


def test_0017_moves_each_open_turn_header_onto_its_session_and_knows_its_highest_seq(
        fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-9]_*.sql")
    migrate_through(fresh_app, tmp_path, "001[0-6]_*.sql")
    header = json.dumps({"turn": {"started_at": "t1"}, "recent": ["u-1"]})
    with db.engine.begin() as conn:
        for sid in ("s1", "s2", "s3"):
            add_old_session(conn, sid, "agent")
        add_old_outputs(conn, "s1", ["a", "b", "c"])  # seqs 0, 1, 2
        conn.execute(text("INSERT INTO session_turn_states (session_id, buffer, updated_at)"
                          " VALUES ('s1', :header, 't')"), {"header": header})
        add_old_outputs(conn, "s2", ["x"])
        conn.execute(text("UPDATE remote_runtime_outputs SET producer_seq = NULL"
                          " WHERE session_id = 's2'"))
    assert migrate_next(fresh_app, tmp_path, "0017_keep_turn_header_on_session.sql") == [17]
    with db.engine.connect() as conn:
        moved = conn.execute(text(
            "SELECT session_id, turn_state, max_seq FROM agent_sessions ORDER BY session_id")).all()
        tables = set(inspect(conn).get_table_names())
    assert [tuple(row) for row in moved] == [("s1", header, 2), ("s2", None, None),
                                             ("s3", None, None)]
    assert "session_turn_states" not in tables
    # and the moved header is the open turn the service goes on with (on today's schema)
    app_db.upgrade(db.engine, fresh_app.config["MIGRATIONS_DIR"])
    with app_db.detached_units_of_work()() as uow:
        assert uow.turn_states.load("s1") == json.loads(header)
        locked = uow.sessions.lock_for_write("s1")
        assert (locked.turn_state, locked.max_seq) == (json.loads(header), 2)


EVIDENCE_MIGRATION = "create_session_evidence"
STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def migrate_before(app, folder, name):
    """Apply every migration numbered below the one named `name`: the previous release."""
    paths = sorted(Path(app.config["MIGRATIONS_DIR"]).glob("*.sql"))
    version = next(p.name[:4] for p in paths if p.name[5:].startswith(f"{name}."))
    for path in paths:
        if path.name[:4] < version:
            shutil.copy(path, folder / path.name)
    app_db.upgrade(db.engine, folder)
    return next(p.name for p in paths if p.name[:4] == version)


def stored_turn_keys(lines):
    """The turn keys the previous release stored for these lines (the accumulator's)."""
    from app.providers import get_parser
    from app.transcript.accumulator import Accumulator
    from app.transcript.turns import Turn

    accumulator, parse = Accumulator(), get_parser("claude")
    return [outcome.key for index, line in enumerate(lines)
            for outcome in accumulator.feed(parse(line), index) if isinstance(outcome, Turn)]


def test_evidence_migration_backfills_the_turns_the_retained_buffer_holds(fresh_app, tmp_path):
    migration = migrate_before(fresh_app, tmp_path, EVIDENCE_MIGRATION)
    lines = (STREAMS / "claude" / "test_runs.jsonl").read_text().splitlines()
    keys = stored_turn_keys(lines)
    with db.engine.begin() as conn:
        for sid in ("whole", "pruned", "empty"):
            add_old_session(conn, sid, "agent")
            conn.execute(text("UPDATE agent_sessions SET provider = 'claude' WHERE session_id = :s"),
                         {"s": sid})
            for key in keys:
                conn.execute(text("INSERT INTO session_turns (session_id, turn_key, closed_at)"
                                  " VALUES (:s, :k, 't')"), {"s": sid, "k": key})
        add_old_outputs(conn, "whole", lines)
        add_old_outputs(conn, "pruned", lines)
        conn.execute(text("DELETE FROM remote_runtime_outputs WHERE session_id = 'pruned'"
                          " AND event_index < 4"))  # the first turn's opening lines expired
    assert len(migrate_next(fresh_app, tmp_path, migration)) == 1
    with db.engine.connect() as conn:
        found = conn.execute(text(
            "SELECT session_id, evidence_id, turn_id, command, exit_code, is_error,"
            " first_event_index, last_event_index, test_summary FROM session_evidence"
            " ORDER BY session_id, id")).all()
    by_session = {}
    for sid, *rest in found:
        by_session.setdefault(sid, []).append(tuple(rest))
    assert [row[0] for row in by_session["whole"]] == ["toolu_01PY", "toolu_01GS", "toolu_01JS"]
    assert [row[1] for row in by_session["whole"]] == [keys[0], keys[0], keys[1]]
    assert by_session["whole"][0][2:6] == ("pytest", 1, 1, 3)
    assert json.loads(by_session["whole"][0][7])["failed"] == 1
    assert [row[0] for row in by_session["pruned"]] == ["toolu_01JS"]  # only the whole turn
    assert "empty" not in by_session


def test_a_failing_python_step_rolls_its_migration_back(fresh_app, tmp_path):
    migration = migrate_before(fresh_app, tmp_path, EVIDENCE_MIGRATION)
    shutil.copy(Path(fresh_app.config["MIGRATIONS_DIR"]) / migration, tmp_path)

    def broken(conn, clock):
        raise RuntimeError("backfill failed")

    with pytest.raises(RuntimeError, match="backfill failed"):
        migrations.upgrade(db.engine, tmp_path, steps={EVIDENCE_MIGRATION: broken})
    _, pending = migrations.status(db.engine, tmp_path)
    assert [m.name for m in pending] == [EVIDENCE_MIGRATION]
    assert "session_evidence" not in set(inspect(db.engine).get_table_names())


def test_0019_backfills_transcript_usage_from_the_turn_rows(fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-9]_*.sql")
    migrate_through(fresh_app, tmp_path, "001[0-8]_*.sql")
    with db.engine.begin() as conn:
        for sid in ("claude", "codex", "none"):
            add_old_session(conn, sid, "agent")
        metadata = {
            "claude": [{"usage": {"input_tokens": 4, "output_tokens": 55,
                                  "cache_read_input_tokens": 9000, "cache_creation_input_tokens": 1200},
                        "result": {"total_cost_usd": 0.0123}},
                       {"usage": {"input_tokens": 1, "output_tokens": 2}, "result": {"total_cost_usd": 0.5}},
                       {"usage": {"input_tokens": "junk", "output_tokens": 1}},
                       {"usage": {"input_tokens": 7, "output_tokens": 1}, "note": NAN_TEXT}],
            "codex": [{"result": {"usage": {"input_tokens": 9000, "cached_input_tokens": 8800,
                                            "output_tokens": 30}}}],
        }
        for sid, rows_of in metadata.items():
            for n, meta in enumerate(rows_of):
                add_old_message(conn, sid, f"turn:{sid}{n}", meta)
        add_old_message(conn, "claude", "system:@0", {"usage": {"input_tokens": 1000}})
    for path in Path(fresh_app.config["MIGRATIONS_DIR"]).glob("0019_*.sql"):
        shutil.copy(path, tmp_path)
    applied = [m.version for m in app_db.upgrade(db.engine, tmp_path)]
    assert applied == [19]
    with db.engine.connect() as conn:
        found = conn.execute(text(
            "SELECT session_id, transcript_input_tokens, transcript_output_tokens,"
            " transcript_cache_read_tokens, transcript_cache_creation_tokens, transcript_cost_usd"
            " FROM agent_sessions ORDER BY session_id")).all()
    found = [(*row[:5], round(row[5], 6)) for row in found]
    # Junk counts nothing; the row holding NaN is skipped.
    assert found == [("claude", 5, 58, 9000, 1200, 0.5123),
                     ("codex", 9000, 30, 8800, 0, 0.0),
                     ("none", 0, 0, 0, 0, 0.0)]


NAN_TEXT = "a row whose metadata Python wrote with NaN in it"


def add_old_message(conn, session_id, turn_key, metadata):
    """A transcript row as 0002 made it; NAN_TEXT in `metadata` becomes a bare NaN."""
    conn.execute(text(
        "INSERT INTO session_messages (session_id, role, content, metadata, source, turn_key,"
        " timestamp) VALUES (:session_id, 'assistant', 'x', :metadata, 'remote_live', :turn_key, 't')"),
        {"session_id": session_id, "turn_key": turn_key,
         "metadata": json.dumps(metadata).replace(json.dumps(NAN_TEXT), "NaN")})


def test_0021_gives_each_running_write_token_a_day_and_leaves_the_others(fresh_app, tmp_path):
    migrate_through(fresh_app, tmp_path, "000[1-9]_*.sql")
    migrate_through(fresh_app, tmp_path, "001[0-9]_*.sql")
    migrate_through(fresh_app, tmp_path, "0020_*.sql")
    tokens = [  # (name, session_id, expires_at, revoked_at)
        ("runner", None, None, None),
        ("running", "s1", None, None),
        ("completed", "s2", "2030-01-01T00:00:00.000000Z", None),
        ("revoked", "s3", None, "2026-01-01T00:00:00.000000Z"),
    ]
    with db.engine.begin() as conn:
        for n, (name, sid, expires, revoked) in enumerate(tokens):
            conn.execute(text(
                "INSERT INTO agent_tokens (kind, name, token_hash, created_at, session_id,"
                " expires_at, revoked_at) VALUES ('runner', :name, :hash, 't', :sid, :expires,"
                " :revoked)"), {"name": name, "hash": f"h{n}", "sid": sid, "expires": expires,
                                "revoked": revoked})
    before = datetime.now(timezone.utc)
    for path in Path(fresh_app.config["MIGRATIONS_DIR"]).glob("0021_*.sql"):
        shutil.copy(path, tmp_path)
    assert [m.version for m in app_db.upgrade(db.engine, tmp_path)] == [21]
    with db.engine.connect() as conn:
        found = dict(conn.execute(text("SELECT name, expires_at FROM agent_tokens")).all())
    assert (found["runner"], found["revoked"]) == (None, None)
    assert found["completed"] == "2030-01-01T00:00:00.000000Z"
    expires = from_iso(found["running"])  # the stored text format, to the microsecond
    assert before + timedelta(hours=23, minutes=59) < expires
    assert expires <= datetime.now(timezone.utc) + timedelta(days=1)
