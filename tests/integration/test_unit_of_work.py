"""SqlUnitOfWork owns its transaction and will not swallow someone else's;
EngineUnitOfWork owns a pooled connection and gives it back."""
import pytest
from sqlalchemy import create_engine
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from app.storage.repositories.dialect import on_driver
from app.storage.unit_of_work import EngineUnitOfWork
from app.storage.unit_of_work import SqlUnitOfWork


@pytest.fixture
def session(database_url):
    """A SQLAlchemy session on the test's own (empty) database, with one table."""
    engine = create_engine(database_url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    with Session(engine) as session:
        yield session
    engine.dispose()


def rows(session):
    return [row[0] for row in session.execute(text("SELECT x FROM t ORDER BY x"))]


def test_refuses_to_start_inside_a_transaction_it_did_not_begin(session):
    session.execute(text("INSERT INTO t VALUES (1)"))  # the outer, uncommitted work
    with pytest.raises(RuntimeError, match="already in a transaction"):
        with SqlUnitOfWork(session):
            pass
    assert session.in_transaction()
    session.commit()
    assert rows(session) == [1]


def test_nested_units_of_work_are_refused_and_the_outer_one_survives(session):
    with SqlUnitOfWork(session) as outer:
        outer.sessions.conn.execute(text("INSERT INTO t VALUES (1)"))
        with pytest.raises(RuntimeError):
            with SqlUnitOfWork(session):
                pass
        outer.commit()
    assert rows(session) == [1]


def test_units_of_work_in_sequence_each_get_a_fresh_transaction(session):
    with SqlUnitOfWork(session) as uow:
        uow.sessions.conn.execute(text("INSERT INTO t VALUES (1)"))
        uow.commit()
    with SqlUnitOfWork(session) as uow:
        uow.sessions.conn.execute(text("INSERT INTO t VALUES (2)"))  # not committed
    assert not session.in_transaction()
    with SqlUnitOfWork(session) as uow:
        assert [row[0] for row in uow.sessions.conn.execute(text("SELECT x FROM t"))] == [1]


@pytest.fixture
def engine(database_url):
    """An engine with a pool on the test's own (empty) database, with one table."""
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    yield engine
    engine.dispose()


def values(engine):
    with engine.connect() as conn:
        return [row[0] for row in conn.execute(text("SELECT x FROM t ORDER BY x"))]


def test_an_engine_unit_of_work_commits_or_rolls_back_and_returns_its_connection(engine):
    with EngineUnitOfWork(engine, write=True) as uow:
        uow.sessions.conn.execute(text("INSERT INTO t VALUES (1)"))
        uow.commit()
    with EngineUnitOfWork(engine, write=True) as uow:
        uow.sessions.conn.execute(text("INSERT INTO t VALUES (2)"))  # not committed
    with pytest.raises(ZeroDivisionError):
        with EngineUnitOfWork(engine, write=True) as uow:
            uow.sessions.conn.execute(text("INSERT INTO t VALUES (3)"))
            1 / 0
    assert values(engine) == [1]
    assert engine.pool.checkedout() == 0


def test_a_writer_nested_in_a_writer_is_refused_and_the_outer_one_survives(engine):
    with EngineUnitOfWork(engine, write=True) as outer:
        outer.sessions.conn.execute(text("INSERT INTO t VALUES (1)"))
        with pytest.raises(RuntimeError, match="already open"):
            with EngineUnitOfWork(engine, write=True):
                pass
        with EngineUnitOfWork(engine) as reader:  # a read beside it is fine
            assert [row[0] for row in reader.sessions.conn.execute(text("SELECT x FROM t"))] == []
        outer.commit()
    with EngineUnitOfWork(engine, write=True) as after:  # the guard is lifted again
        after.sessions.conn.execute(text("INSERT INTO t VALUES (2)"))
        after.commit()
    assert values(engine) == [1, 2]
    assert engine.pool.checkedout() == 0


def test_driver_and_sqlalchemy_statements_share_one_transaction(engine):
    with EngineUnitOfWork(engine, write=True) as uow:
        conn = uow.sessions.conn
        on_driver(conn, "INSERT INTO t VALUES ({m})", (1,))
        assert conn.sqlalchemy is None  # a SQLAlchemy Connection is made only when needed
        conn.execute(text("INSERT INTO t VALUES (2)"))
        assert conn.sqlalchemy is not None
    assert values(engine) == []  # neither was committed: both are rolled back
    with EngineUnitOfWork(engine, write=True) as uow:
        on_driver(uow.sessions.conn, "INSERT INTO t VALUES ({m})", (3,))
        uow.sessions.conn.execute(text("INSERT INTO t VALUES (4)"))
        uow.commit()
    assert values(engine) == [3, 4]
    assert engine.pool.checkedout() == 0


@pytest.mark.sqlite_only
def test_a_database_that_cannot_be_opened_fails_as_sqlalchemy_reports_it(database_url, tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'no-such-folder' / 'turnlog.sqlite'}")
    with pytest.raises(OperationalError, match="unable to open database file"):
        with EngineUnitOfWork(engine, write=True):
            pass
    assert engine.pool.checkedout() == 0
    with EngineUnitOfWork(create_engine(database_url), write=True):
        pass  # no writer was left marked open in this context
