"""The databases tests run on: migrated once per test session into a template, then
copied for each test that uses the app; an empty one for each test that migrates
(or fails to migrate) on its own.

- SQLite: the template is a migrated file; a test gets a copy of it.
- PostgreSQL: the template is a migrated database; a test gets
  `CREATE DATABASE ... TEMPLATE` of it, dropped afterwards. A role that may not create
  databases falls back to a schema of its own, migrated for that test. An empty
  database is a fresh schema either way (creating one costs next to nothing).
"""
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from app import db as app_db

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"
# How long a test database's drop waits for the app's last connections to close.
DROP_WAIT_SECONDS = 8


def migrate(url):
    """Apply every migration to the database at `url`, leaving no connection open."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        app_db.upgrade(engine, MIGRATIONS_DIR)
    finally:
        engine.dispose()


def sqlite_template(folder):
    """A migrated SQLite file in `folder` (its WAL checkpointed away when it closed)."""
    path = folder / "template.sqlite"
    migrate(f"sqlite:///{path}")
    return path


def copy_sqlite(template, path):
    shutil.copyfile(template, path)


class Postgres:
    """The PostgreSQL server behind `url`, where tests make their databases."""

    def __init__(self, url):
        self.url = make_url(url)
        self.admin = create_engine(self.url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        self.template = None

    def start(self):
        """Make the migrated template when this role may create databases."""
        with self.admin.connect() as conn:
            may_create, = conn.exec_driver_sql(
                "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user").one()
        if may_create:
            name = f"turnlog_template_{uuid.uuid4().hex[:12]}"
            self._execute(f"CREATE DATABASE {name}")
            self.template = name
            migrate(self._url_of(name))

    def stop(self):
        if self.template:
            self._drop(self.template)
        self.admin.dispose()

    @contextmanager
    def migrated(self):
        """The URL of a new migrated database, dropped on exit."""
        if self.template is None:
            with self.schema() as url:
                migrate(url)
                yield url
            return
        name = f"t_{uuid.uuid4().hex}"
        self._execute(f"CREATE DATABASE {name} TEMPLATE {self.template}")
        try:
            yield self._url_of(name)
        finally:
            self._drop(name)

    @contextmanager
    def schema(self):
        """The URL of a new, empty schema in the test database; dropped on exit."""
        name = f"t_{uuid.uuid4().hex}"
        self._execute(f"CREATE SCHEMA {name}")
        try:
            url = self.url.update_query_dict({"options": f"-csearch_path={name}"})
            yield url.render_as_string(hide_password=False)
        finally:
            with self.admin.begin() as conn:
                conn.exec_driver_sql("SET LOCAL lock_timeout = '10s'")
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")

    def _drop(self, name):
        """Drop database `name`. A plain DROP stops an autovacuum worker in it by itself
        (FORCE would need the right to signal the superuser's processes); FORCE is for
        a connection a failed test left open. A listener of the app's (the command bell
        lingers a few seconds after its last runner) ends by itself: waited for first."""
        deadline = time.monotonic() + DROP_WAIT_SECONDS
        while True:
            try:
                self._execute(f"DROP DATABASE IF EXISTS {name}")
                return
            except OperationalError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.2)
        self._execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def _url_of(self, database):
        return self.url.set(database=database).render_as_string(hide_password=False)

    def _execute(self, sql):
        with self.admin.connect() as conn:
            conn.exec_driver_sql(sql)
