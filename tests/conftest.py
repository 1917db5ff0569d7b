"""Shared fixtures: a real SQLite file per test with every migration applied."""
import pytest

from app import create_app
from app.extensions import db
from app.services import migrations


def pytest_collection_modifyitems(items):
    """Mark each test with the ring its folder names (unit, integration, e2e)."""
    for item in items:
        for ring in ("unit", "integration", "e2e"):
            if f"tests/{ring}/" in str(item.fspath).replace("\\", "/"):
                item.add_marker(ring)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "turnlog.sqlite"


@pytest.fixture
def app(db_path):
    app = create_app({
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": f"sqlite:///{db_path}",
    })
    with app.app_context():
        migrations.upgrade(db.engine, app.config["MIGRATIONS_DIR"])
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()
