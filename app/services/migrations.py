"""Apply the numbered SQL files in migrations/ in order, each exactly once.

Each file runs in its own write transaction together with the row that records
it, so a failing file leaves no trace and a second run skips what is done.
"""
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from app.services.clock import to_iso
from app.services.clock import utc_now
from app.services.repositories.schema_migrations import SchemaMigrationRepository
from app.services.unit_of_work import WRITE_OPTION

FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(Exception):
    """The migrations folder is missing, empty or inconsistent (bad name, gap, twin)."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def discover(folder):
    """Every migration file in `folder`, numbered 1, 2, 3... with no gaps or twins.

    A folder that does not exist or holds no .sql file is an error, not "nothing
    to do": it almost always means a wrong MIGRATIONS_DIR.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MigrationError(f"migrations folder {folder} does not exist")
    paths = sorted(folder.glob("*.sql"))
    if not paths:
        raise MigrationError(f"migrations folder {folder} has no .sql files")
    migrations = []
    for path in paths:
        match = FILENAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: name must look like 0001_create_things.sql")
        migrations.append(Migration(int(match[1]), match[2], path.read_text("utf-8")))
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"migration numbers must run 1..N without gaps, got {versions}")
    return migrations


def split_statements(sql):
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements, pending = [], ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statement = _strip_comments(pending).strip()
            if statement:
                statements.append(statement)
            pending = ""
    if _strip_comments(pending).strip():
        raise MigrationError(f"unterminated statement: {pending.strip()[:80]}")
    return statements


def status(engine, folder):
    """(applied, pending): applied as {version: (name, applied_at)}, pending Migrations."""
    found = discover(folder)  # a bad folder fails before the database is touched
    with engine.begin() as conn:
        repo = SchemaMigrationRepository(conn)
        repo.lock()
        repo.ensure_table()
        applied = repo.applied()
    return applied, [m for m in found if m.version not in applied]


def upgrade(engine, folder, *, clock=utc_now):
    """Apply pending migrations in order; return the ones applied now."""
    _, pending = status(engine, folder)
    done = []
    for migration in pending:
        statements = split_statements(migration.sql)
        with engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                repo = SchemaMigrationRepository(conn)
                repo.lock()
                if repo.is_applied(migration.version):  # another process got there first
                    continue
                for statement in statements:
                    repo.run_statement(statement)
                repo.record(migration.version, migration.name, to_iso(clock()))
        done.append(migration)
    return done


def _strip_comments(sql):
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
