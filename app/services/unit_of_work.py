"""Units of work: one transaction, with the repositories bound to it.

Leaving the `with` block rolls back unless `commit()` was called, so a failed
use case never leaves half its writes behind.
"""
from app.services import repositories

# Execution option read by the SQLite `begin` hook: writers take the write lock
# up front (BEGIN IMMEDIATE) and wait for it, instead of failing mid-transaction.
WRITE_OPTION = "turnlog_write"


class AbstractUnitOfWork:
    sessions = messages = outputs = turn_states = usage = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.rollback()

    def commit(self):
        raise NotImplementedError

    def rollback(self):
        raise NotImplementedError


class SqlUnitOfWork(AbstractUnitOfWork):
    """A unit of work on a SQLAlchemy `Session` (flask-sqlalchemy's per-request one)."""

    def __init__(self, session, write=False):
        self._session = session
        self._write = write

    def __enter__(self):
        # Start a fresh transaction so a writer's lock is taken at BEGIN.
        self._session.close()
        options = {WRITE_OPTION: True} if self._write else {}
        conn = self._session.connection(execution_options=options)
        self.sessions = repositories.SessionRepository(conn)
        self.messages = repositories.MessageRepository(conn)
        self.outputs = repositories.OutputRepository(conn)
        self.turn_states = repositories.TurnStateRepository(conn)
        self.usage = repositories.UsageRepository(conn)
        return self

    def __exit__(self, *exc_info):
        super().__exit__(*exc_info)
        self._session.close()

    def commit(self):
        self._session.commit()

    def rollback(self):
        self._session.rollback()
