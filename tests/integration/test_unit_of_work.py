"""SqlUnitOfWork owns its transaction and will not swallow someone else's."""
import pytest
from sqlalchemy import create_engine
from sqlalchemy import text
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

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
