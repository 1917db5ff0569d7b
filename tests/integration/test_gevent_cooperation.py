"""Under gevent's monkey-patching (gunicorn's gevent worker), waiting on the database
must let the worker's other requests run: a SQLite writer queueing for the write lock,
and a PostgreSQL query through psycopg. Each check runs in a fresh interpreter,
patched first, as the worker is."""
import os
import subprocess
import sys

import pytest

from tests.servers import ROOT

# A ticker greenlet counts its turns while the waiting call runs: a call that
# blocked the whole process would leave it at 0 or 1.
TICKER = """
from gevent import monkey
monkey.patch_all()
import sys, time, gevent
ticks = []
def ticker(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ticks.append(1)
        gevent.sleep(0.02)
"""
SQLITE_WAIT = TICKER + """
import sqlite3
from sqlalchemy import create_engine
from app.db import configure_sqlite
path = sys.argv[1]
holder = sqlite3.connect(path, isolation_level=None)
holder.execute("PRAGMA journal_mode = WAL")
holder.execute("CREATE TABLE t (x)")
holder.execute("BEGIN IMMEDIATE")
engine = create_engine(f"sqlite:///{path}")
configure_sqlite(engine, busy_timeout=5.0)
def release_later():
    gevent.sleep(0.6)
    holder.execute("COMMIT")
def write():
    with engine.connect() as conn:
        conn = conn.execution_options(turnlog_write=True)
        with conn.begin():
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
gevent.joinall([gevent.spawn(ticker, 0.5), gevent.spawn(release_later), gevent.spawn(write)])
assert holder.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1  # the write went through
print(len(ticks))
"""
POSTGRES_WAIT = TICKER + """
import psycopg
def query():
    with psycopg.connect(sys.argv[1]) as conn:
        conn.execute("SELECT pg_sleep(0.5)")
gevent.joinall([gevent.spawn(ticker, 0.5), gevent.spawn(query)])
print(len(ticks))
"""


def ticks_while(script, argument):
    done = subprocess.run([sys.executable, "-c", script, argument], cwd=ROOT, timeout=60,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.sqlite_only
def test_a_sqlite_writer_waiting_for_the_lock_lets_other_greenlets_run(database_url, tmp_path):
    assert ticks_while(SQLITE_WAIT, str(tmp_path / "locked.sqlite")) >= 10


def test_a_postgresql_query_lets_other_greenlets_run(backend, database_url):
    if backend != "postgresql":
        pytest.skip("PostgreSQL only (set TURNLOG_TEST_POSTGRES_URL)")
    url = database_url.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
    assert ticks_while(POSTGRES_WAIT, url) >= 10
