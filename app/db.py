"""Database wiring: flask-sqlalchemy's engine with turnlog's connection settings,
the units of work views hand to services, and the migrations with their Python steps."""
import functools
import sqlite3

from flask import current_app
from sqlalchemy import event
from sqlalchemy.orm import Session

from app.core.clock import utc_now
from app.extensions import db
from app.services import evidence
from app.storage import live_notify
from app.storage import migrations
from app.storage.repositories.dialect import driver_error
from app.storage.sqlite_lock import C_BUSY_MS
from app.storage.sqlite_lock import begin_immediate
from app.storage.sqlite_lock import retry_busy
from app.storage.unit_of_work import WRITE_OPTION
from app.storage.unit_of_work import EngineUnitOfWork
from app.storage.unit_of_work import SqlUnitOfWork
from app.storage.wal_checkpoints import BACKSTOP_PAGES
from app.storage.wal_checkpoints import WalCheckpointer
from app.storage.wal_checkpoints import database_file

# The cheapest statement that starts a read transaction (it reads the first page), so
# that a lock keeping readers out is met, and waited for, as the transaction begins.
READ_PROBE = "SELECT 1 FROM sqlite_master LIMIT 1"
# app.extensions key: the app's factory of write units of work (`writing()`), its
# engine and the begin and after-commit hooks configure_sqlite made bound in once.
WRITES = "turnlog_writes"
# Migration name -> the use case that makes its data change SQL cannot, run by
# app/storage/migrations.py after the migration's SQL, in the same transaction: 0018's
# backfill reads the evidence out of the retained buffer (app/services/evidence.py).
MIGRATION_STEPS = {"create_session_evidence": evidence.backfill}


def init_app(app):
    """Bind flask-sqlalchemy to `app`; on SQLite, set turnlog's connection pragmas."""
    db.init_app(app)
    with app.app_context():
        engine = db.engine
        begin, checkpointer = None, None
        if engine.dialect.name == "sqlite":
            begin, checkpointer = configure_sqlite(
                engine, app.config["SQLITE_BUSY_TIMEOUT"], app.config["SQLITE_CHECKPOINT_SECONDS"],
                read_timeout=app.config["SQLITE_READ_BUSY_TIMEOUT"])
        app.extensions["wal_checkpointer"] = checkpointer
        app.extensions[WRITES] = functools.partial(
            EngineUnitOfWork, engine, write=True, begin=begin,
            after_commit=checkpointer.wrote if checkpointer else None)


def configure_sqlite(engine, busy_timeout, checkpoint_seconds=0, *, read_timeout=0):
    """WAL, foreign keys and a short busy timeout on every connection; explicit BEGINs.

    pysqlite's own transaction handling is turned off so that turnlog decides how
    a transaction begins: writers say BEGIN IMMEDIATE and queue for the lock for
    up to `busy_timeout` seconds, sleeping in Python between tries (see
    app/storage/sqlite_lock.py); readers say BEGIN and never block writers (WAL),
    then take their snapshot at once (READ_PROBE), waiting up to `read_timeout`
    seconds, the same way, for an exclusive lock on the file to go (a checkpoint on
    close, a log recovery). A new connection waits as long for its first look at the
    file (PRAGMA journal_mode).

    With `checkpoint_seconds`, a thread checkpoints the log that often while writes
    come, instead of the commit that happens to fill it (app/storage/wal_checkpoints.py);
    it is returned (None: commits checkpoint a full log, as SQLite does by default),
    after the function that begins a write unit of work's transaction on the driver.
    """
    path = database_file(engine) if checkpoint_seconds else None
    checkpointer = WalCheckpointer(path, checkpoint_seconds) if path else None

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {min(C_BUSY_MS, int(busy_timeout * 1000))}")
        retry_busy(lambda: cursor.execute("PRAGMA journal_mode = WAL"), read_timeout)
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = NORMAL")
        if checkpointer:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
        cursor.close()

    def begin_write(conn):
        """BEGIN IMMEDIATE on the driver of `conn`, waiting for the lock in Python."""
        driver = conn.connection.driver_connection

        def last_try():
            try:
                driver.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise driver_error(conn, err, "BEGIN IMMEDIATE") from err

        begin_immediate(driver, busy_timeout, last_try)

    @event.listens_for(engine, "begin")
    def on_begin(conn):
        if conn.connection.driver_connection.in_transaction:
            return  # begun on the driver by a write unit of work (begin_write)
        if conn.get_execution_options().get(WRITE_OPTION):
            begin_write(conn)
        else:
            conn.exec_driver_sql("BEGIN")
            begin_read(conn)

    def begin_read(conn):
        """Take the read snapshot of the transaction just begun, waiting in Python."""
        driver = conn.connection.driver_connection
        try:
            retry_busy(lambda: driver.execute(READ_PROBE).fetchall(), read_timeout)
        except sqlite3.Error as err:
            driver.rollback()
            raise driver_error(conn, err, READ_PROBE) from err

    if checkpointer:
        @event.listens_for(engine, "commit")
        def on_commit(conn):
            if conn.get_execution_options().get(WRITE_OPTION):
                checkpointer.wrote()

    return begin_write, checkpointer


def reading():
    """A unit of work for reads on this request's session."""
    return SqlUnitOfWork(db.session())


def writing():
    """A unit of work that holds the write lock from its first statement, on a pooled
    connection of its own (writes need none of the ORM session's bookkeeping)."""
    return current_app.extensions[WRITES]()


def detached_units_of_work():
    """A factory of units of work on sessions of their own, for code that outlives the
    request (a streaming response): each one opens and closes its own connection."""
    engine = db.engine

    def new_uow(write=False):
        return SqlUnitOfWork(Session(engine), write=write)

    return new_uow


def notification_listener(channel=live_notify.CHANNEL):
    """The live hub's (or, on `channel` COMMANDS_CHANNEL, the command bell's)
    `listen(on_notify, stop)` where the database notifies other instances' commits
    (PostgreSQL), else None (the poll alone)."""
    engine = db.engine
    if not live_notify.supported(engine):
        return None
    return lambda on_notify, stop, on_listening=None: live_notify.listen(
        engine, on_notify, stop=stop, channel=channel, on_listening=on_listening)


def migrations_dir():
    """The folder of NNNN_name.sql migrations this app applies."""
    return current_app.config["MIGRATIONS_DIR"]


def upgrade(engine, folder, *, clock=utc_now):
    """Apply the pending migrations in `folder` to `engine`'s database, each with its
    Python step (MIGRATION_STEPS); return the ones applied now."""
    return migrations.upgrade(engine, folder, steps=MIGRATION_STEPS, clock=clock)
