"""SQL for `schema_migrations`, the record of which migration files ran."""
from sqlalchemy import text

from app.storage.repositories.dialect import ddl
from app.storage.repositories.dialect import lock_migrations

CREATE = text(
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
)
SELECT_APPLIED = text("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
SELECT_ONE = text("SELECT 1 FROM schema_migrations WHERE version = :version")
INSERT = text(
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, :now)"
)


class SchemaMigrationRepository:
    """Reads and writes `schema_migrations` on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def ensure_table(self):
        """Create `schema_migrations` when it does not exist yet."""
        self.conn.execute(CREATE)

    def applied(self):
        """{version: (name, applied_at)} of every migration already run."""
        return {row[0]: (row[1], row[2]) for row in self.conn.execute(SELECT_APPLIED)}

    def lock(self):
        """Serialise migration runs until this transaction ends (another process waits)."""
        lock_migrations(self.conn)

    def is_applied(self, version):
        """True when migration `version` has run already."""
        return self.conn.execute(SELECT_ONE, {"version": version}).first() is not None

    def run_statement(self, statement):
        """Run one DDL statement from a migration file, as written for this database."""
        self.conn.exec_driver_sql(ddl(self.conn, statement))

    def record(self, version, name, now):
        """Note that migration `version` (`name`) ran at `now`."""
        self.conn.execute(INSERT, {"version": version, "name": name, "now": now})
