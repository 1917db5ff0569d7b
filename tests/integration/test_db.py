"""Connection settings and configuration: WAL, foreign keys, busy timeout, env overrides."""
import pytest
from sqlalchemy import text

from app import create_app
from app.extensions import db
from app.storage.sqlite_lock import C_BUSY_MS
from tests import claude_lines as cl
from tests.api import create_session
from tests.api import post_lines


@pytest.mark.sqlite_only
def test_every_connection_has_wal_foreign_keys_and_a_busy_timeout(app):
    with app.app_context(), db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        # SQLite waits in C only briefly; writers wait for the lock in Python
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == C_BUSY_MS


def test_deleting_a_session_cascades_to_its_rows(app, client):
    sid = create_session(client)
    post_lines(client, sid, [cl.assistant(cl.text("x")), cl.result()])
    with app.app_context(), db.engine.begin() as conn:
        conn.execute(text("DELETE FROM agent_sessions WHERE session_id = :s"), {"s": sid})
        left = conn.execute(text(
            "SELECT (SELECT COUNT(*) FROM session_messages WHERE session_id = :s)"
            " + (SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = :s)"), {"s": sid})
        assert left.scalar() == 0


def test_settings_come_from_prefixed_environment_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("TURNLOG_MAX_CONTENT_LENGTH", "1234")
    monkeypatch.setenv("TURNLOG_SQLALCHEMY_DATABASE_URI", f"sqlite:///{tmp_path / 'env.sqlite'}")
    configured = create_app()
    assert configured.config["MAX_CONTENT_LENGTH"] == 1234
    assert configured.config["SQLALCHEMY_DATABASE_URI"].endswith("env.sqlite")
    with configured.app_context():
        db.engine.dispose()


def test_test_config_wins_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TURNLOG_MAX_CONTENT_LENGTH", "1234")
    configured = create_app({"MAX_CONTENT_LENGTH": 99,
                             "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 't.sqlite'}"})
    assert configured.config["MAX_CONTENT_LENGTH"] == 99
    with configured.app_context():
        db.engine.dispose()


def test_default_database_is_a_file_in_the_instance_folder(monkeypatch):
    monkeypatch.delenv("TURNLOG_SQLALCHEMY_DATABASE_URI", raising=False)
    configured = create_app({"TESTING": True})
    assert configured.config["SQLALCHEMY_DATABASE_URI"] == (
        f"sqlite:///{configured.instance_path}/turnlog.sqlite")
    with configured.app_context():
        db.engine.dispose()
