"""Shared fixtures: a fresh database per test with every migration applied.

Every test that uses the `app` (or `database_url`) runs on SQLite, a file of its
own, and, when TURNLOG_TEST_POSTGRES_URL names a PostgreSQL database
(postgresql+psycopg://user:password@host:port/dbname, see .ci/postgres), once more
on PostgreSQL, in a schema of its own that is dropped afterwards. A test marked
`sqlite_only` checks something only SQLite has (PRAGMAs, file locks, the file itself).
"""
import os
import uuid
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine
from sqlalchemy import make_url
from sqlalchemy.pool import NullPool

from app import create_app
from app.extensions import db
from app.storage import migrations
from app.storage.repositories.dialect import mark
from tests import figures

POSTGRES_URL = os.environ.get("TURNLOG_TEST_POSTGRES_URL")
BACKENDS = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]


def pytest_collection_modifyitems(items):
    """Mark each test with the ring its folder names (unit, integration, e2e)."""
    for item in items:
        for ring in ("unit", "integration", "e2e"):
            if f"tests/{ring}/" in str(item.fspath).replace("\\", "/"):
                item.add_marker(ring)


def pytest_terminal_summary(terminalreporter):
    """The reliability figures the tests recorded (tests/figures.py)."""
    figures.report(terminalreporter.write_line)


def pytest_generate_tests(metafunc):
    """Run every test that needs a database once per backend (`backend` names it)."""
    if "backend" in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("backend", ["sqlite"] if sqlite_only else BACKENDS)


@pytest.fixture
def db_path(tmp_path):
    """The SQLite file of this test (on the sqlite backend)."""
    return tmp_path / "turnlog.sqlite"


@contextmanager
def postgres_schema():
    """The URL of a new, empty schema in the test database; dropped on exit."""
    admin = create_engine(POSTGRES_URL, poolclass=NullPool)
    name = f"t_{uuid.uuid4().hex}"
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {name}")
        url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={name}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql("SET LOCAL lock_timeout = '10s'")
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        admin.dispose()


@pytest.fixture
def database_url(backend, db_path):
    """A SQLAlchemy URL of an empty database of this test's backend."""
    if backend == "sqlite":
        yield f"sqlite:///{db_path}"
    else:
        with postgres_schema() as url:
            yield url


@pytest.fixture
def app_config():
    """Settings of the `app` fixture; override it in a module to change them.

    Authentication is off here: these tests are about transcripts, and tests/e2e's
    auth tests (with `secured_app`) prove every route asks for its token.
    """
    return {"AUTH_DISABLED": True}


@pytest.fixture
def app(database_url, app_config):
    app = create_app({
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SECRET_KEY": "tests-only-secret",
        **app_config,
    })
    with app.app_context():
        migrations.upgrade(db.engine, app.config["MIGRATIONS_DIR"])
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def rows(database_url):
    """rows(sql, *params): run one statement on a connection of its own and commit;
    the rows as tuples ([] for a statement that returns none).

    `?` marks a parameter on either backend (SQL in tests holds no other `?` or `%`).
    """
    engine = create_engine(database_url, poolclass=NullPool)

    def query(sql, *params):
        with engine.begin() as conn:
            result = conn.exec_driver_sql(sql.replace("?", mark(conn)), params)
            return [tuple(row) for row in result] if result.returns_rows else []

    yield query
    engine.dispose()
