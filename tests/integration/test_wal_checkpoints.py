"""The write-ahead log is checkpointed by a thread while writes come, not by the
commit that fills it; requests keep SQLite's automatic checkpoint as a backstop."""
import os
import sqlite3
import time

import pytest
from sqlalchemy import text

from app import create_app
from app.core.records import Chunk
from app.db import writing
from app.extensions import db
from app.services.ingest import ingest_output
from app.storage import wal_checkpoints
from app.storage.wal_checkpoints import BACKSTOP_PAGES
from app.storage.wal_checkpoints import WalCheckpointer

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "SQLITE_CHECKPOINT_SECONDS": 0.05}


def wait_for(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def autocheckpoint(app):
    with app.app_context():
        value = db.session.execute(text("PRAGMA wal_autocheckpoint")).scalar()
        db.session.remove()
        return value


def test_writes_reach_the_database_file_through_the_checkpoint_thread(app, new_session, db_path):
    checkpointer = app.extensions["wal_checkpointer"]
    sid = new_session()
    before = os.path.getsize(db_path)
    lines = [Chunk("x" * 2000, "stdout", seq) for seq in range(500)]  # ~1 MB, under the backstop
    with app.app_context():
        ingest_output(sid, lines, writing(), retention_seconds=3600)

    wait_for(lambda: checkpointer.checkpoints > 0 and os.path.getsize(db_path) > before + 1_000_000)
    assert autocheckpoint(app) == BACKSTOP_PAGES  # no request checkpointed a log this small


def test_the_thread_ends_when_writes_stop_and_comes_back_with_the_next(app, new_session):
    checkpointer = app.extensions["wal_checkpointer"]
    sid = new_session()
    assert checkpointer.running
    wait_for(lambda: not checkpointer.running)

    with app.app_context():
        ingest_output(sid, [Chunk("again", "stdout", 0)], writing(), retention_seconds=3600)
    assert checkpointer.running
    taken = checkpointer.checkpoints
    wait_for(lambda: checkpointer.checkpoints > taken)


def test_reads_alone_start_no_thread(app):
    checkpointer = app.extensions["wal_checkpointer"]
    wait_for(lambda: not checkpointer.running)
    with app.app_context():
        db.session.execute(text("SELECT count(*) FROM agent_sessions")).scalar()
        db.session.remove()
    assert not checkpointer.running


def test_turned_off_commits_checkpoint_as_sqlite_does(database_url):
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": database_url,
                      "SECRET_KEY": "tests-only-secret", "SQLITE_CHECKPOINT_SECONDS": 0})
    assert app.extensions["wal_checkpointer"] is None
    assert autocheckpoint(app) == 1000
    with app.app_context():
        db.engine.dispose()


def test_a_missing_database_file_is_not_created(tmp_path):
    path = tmp_path / "gone.sqlite"
    checkpointer = WalCheckpointer(str(path), 0.01)
    checkpointer.wrote()
    wait_for(lambda: not checkpointer.running)
    assert not path.exists() and checkpointer.checkpoints == 0


def test_a_thread_that_fails_lets_the_next_write_start_another(tmp_path, monkeypatch):
    path = tmp_path / "t.sqlite"
    sqlite3.connect(path).close()
    checkpointer = WalCheckpointer(str(path), 0.01)

    def broken(conn):
        raise RuntimeError("an unexpected failure")
    monkeypatch.setattr(checkpointer, "_checkpoint", broken)
    monkeypatch.setattr(wal_checkpoints, "_start_thread", lambda run, args: run(*args))
    with pytest.raises(RuntimeError):
        checkpointer.wrote()  # run inline here: the failure surfaces in the caller
    assert not checkpointer.running
