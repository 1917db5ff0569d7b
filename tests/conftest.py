"""Shared fixtures: a database of its own for every test that uses one.

Every test that uses the `app` (or `database_url`) runs on SQLite, a file of its
own, and, when TURNLOG_TEST_POSTGRES_URL names a PostgreSQL database
(postgresql+psycopg://user:password@host:port/dbname, see .ci/postgres), once more
on PostgreSQL, in a database or schema of its own that is dropped afterwards. With
the `app`, that database has every migration applied: copied from a template
migrated once per test session (tests/databases.py). A test marked `sqlite_only`
checks something only SQLite has (PRAGMAs, file locks, the file itself).
"""
import os

import pytest
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from app import create_app
from app import db as app_db
from app.extensions import db
from app.storage.repositories.dialect import mark
from tests import databases
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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A SQLite file with every migration applied, made once per test session."""
    return databases.sqlite_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def postgres():
    """The PostgreSQL server of TURNLOG_TEST_POSTGRES_URL, its migrated template made once."""
    server = databases.Postgres(POSTGRES_URL)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def database_url(request, backend, db_path):
    """A SQLAlchemy URL of this test's own database of its backend: with every migration
    applied when the test uses the `app`, else empty (the test migrates it, or not)."""
    migrated = "app" in request.fixturenames
    if backend == "sqlite":
        if migrated:
            databases.copy_sqlite(request.getfixturevalue("sqlite_template"), db_path)
        yield f"sqlite:///{db_path}"
        return
    postgres = request.getfixturevalue("postgres")
    with postgres.migrated() if migrated else postgres.schema() as url:
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
        # A no-op on the copy of the template; it catches a template that fell behind.
        assert app_db.upgrade(db.engine, app.config["MIGRATIONS_DIR"]) == []
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
