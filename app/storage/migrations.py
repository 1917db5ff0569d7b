"""Apply the numbered SQL files in migrations/ in order, each exactly once.

Each file runs in its own write transaction together with the row that records
it, so a failing file leaves no trace and a second run skips what is done. A
migration whose data change SQL cannot make has a Python step, which the caller
passes in (app/db.py's MIGRATION_STEPS): the steps are use cases, and storage calls
up into none.
"""
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import MigrationError
from app.storage.repositories.schema_migrations import SchemaMigrationRepository
from app.storage.unit_of_work import WRITE_OPTION
from app.storage.unit_of_work import repositories_on

# 0001_create_things.sql runs everywhere; a migration that cannot be portable comes
# as one file per database, 0009_add_search.sqlite.sql and 0009_add_search.postgresql.sql.
FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)(?:\.(sqlite|postgresql))?\.sql$")
DIALECTS = ("sqlite", "postgresql")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def discover(folder, dialect="sqlite"):
    """Every migration in `folder` as `dialect` runs it, numbered 1, 2, 3... with no
    gaps or twins.

    A folder that does not exist or holds no .sql file is an error, not "nothing
    to do": it almost always means a wrong MIGRATIONS_DIR.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MigrationError(f"migrations folder {folder} does not exist")
    paths = sorted(folder.glob("*.sql"))
    if not paths:
        raise MigrationError(f"migrations folder {folder} has no .sql files")
    files = {}  # version -> {dialect or None: (name, path)}
    for path in paths:
        match = FILENAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: name must look like 0001_create_things.sql"
                                 " or 0001_create_things.sqlite.sql")
        variants = files.setdefault(int(match[1]), {})
        if match[3] in variants:
            raise MigrationError(f"migration {match[1]} has twins: {variants[match[3]][1].name}"
                                 f" and {path.name}")
        variants[match[3]] = (match[2], path)
    versions = sorted(files)
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"migration numbers must run 1..N without gaps, got {versions}")
    return [_variant(version, files[version], dialect) for version in versions]


def _variant(version, variants, dialect):
    """The one file of `version` that `dialect` runs: the portable one, or its own."""
    names = {name for name, _ in variants.values()}
    if len(names) > 1:
        raise MigrationError(f"migration {version:04d} has files of different names: {sorted(names)}")
    if None in variants and len(variants) > 1:
        raise MigrationError(f"migration {version:04d} is both portable and per database")
    if None not in variants and set(variants) != set(DIALECTS):
        raise MigrationError(f"migration {version:04d} needs one file per database"
                             f" ({', '.join(DIALECTS)}), found {sorted(variants)}")
    name, path = variants[None] if None in variants else variants[dialect]
    return Migration(version, name, path.read_text("utf-8"))


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
    found = discover(folder, engine.dialect.name)  # a bad folder fails before the database is touched
    # A writer's transaction: the first run creates schema_migrations here.
    with engine.connect() as conn, conn.execution_options(**{WRITE_OPTION: True}).begin():
        repo = SchemaMigrationRepository(conn)
        repo.lock()
        repo.ensure_table()
        applied = repo.applied()
    return applied, [m for m in found if m.version not in applied]


def upgrade(engine, folder, *, steps, clock=utc_now):
    """Apply pending migrations in order; return the ones applied now.

    `steps` maps a migration's name (not its number, so renumbering a migration keeps
    its step) to its Python step, called after the migration's SQL, in the same
    transaction, as `step(repositories, clock=clock)` over that transaction's
    repositories. app/db.py's `upgrade` passes turnlog's own (MIGRATION_STEPS).
    """
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
                if migration.name in steps:
                    steps[migration.name](repositories_on(conn), clock=clock)
                repo.record(migration.version, migration.name, to_iso(clock()))
        done.append(migration)
    return done


def _strip_comments(sql):
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
