"""Units of work: one transaction, with the repositories bound to it.

Leaving the `with` block rolls back unless `commit()` was called, so a failed
use case never leaves half its writes behind.
"""
from contextvars import ContextVar

from sqlalchemy.engine import Connection

from app.storage.repositories.control.commands import CommandRepository
from app.storage.repositories.control.inputs import InputRepository
from app.storage.repositories.control.permissions import PermissionRepository
from app.storage.repositories.control.runners import RunnerRepository
from app.storage.repositories.dialect import driver_error
from app.storage.repositories.evidence import EvidenceRepository
from app.storage.repositories.evidence import ToolResultRepository
from app.storage.repositories.final_events import FinalEventRepository
from app.storage.repositories.messages import MessageRepository
from app.storage.repositories.outputs import OutputRepository
from app.storage.repositories.search import SearchRepository
from app.storage.repositories.sessions import SessionRepository
from app.storage.repositories.stream_cursors import StreamCursorRepository
from app.storage.repositories.stream_leases import StreamLeaseRepository
from app.storage.repositories.tokens import TokenRepository
from app.storage.repositories.turn_states import TurnStateRepository
from app.storage.repositories.turns import TurnRepository
from app.storage.repositories.usage import UsageRepository
from app.storage.repositories.usage import UserDayRepository

# Set while this context (thread, greenlet) has a write unit of work open.
_writer = ContextVar("turnlog_writer_open", default=False)

# Execution option read by the SQLite `begin` hook: writers take the write lock
# up front (BEGIN IMMEDIATE) and wait for it, instead of failing mid-transaction.
WRITE_OPTION = "turnlog_write"


class AbstractUnitOfWork:
    """One transaction with its repositories; leaving it rolls back what was not committed."""

    sessions = messages = outputs = turn_states = turns = usage = stream_cursors = tokens = None
    search = stream_leases = final_events = evidence = inputs = commands = permissions = None
    runners = tool_results = None

    def __enter__(self):
        """Start the unit of work."""
        return self

    def __exit__(self, *exc_info):
        """End the unit of work, rolling back anything not committed."""
        self.rollback()

    def commit(self):
        """Make this unit of work's writes durable."""
        raise NotImplementedError

    def rollback(self):
        """Discard this unit of work's uncommitted writes."""
        raise NotImplementedError


class _Repository:
    """A repository class as an attribute of a unit of work: made on first use, bound
    to the unit of work's connection, then kept in the unit of work's own attributes."""

    def __init__(self, repository):
        self.repository = repository
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, uow, owner=None):
        if uow is None:
            return self
        repository = self.repository(uow._conn_of_repositories)
        setattr(uow, self.name, repository)  # found first from now on: no second call
        return repository


class _SqlRepositories(AbstractUnitOfWork):
    """The repositories of one connection (`_bind`), each made when first used: a use
    case touches a few of the thirteen, and making them all showed in an ingest request."""

    _conn_of_repositories = None
    sessions = _Repository(SessionRepository)
    messages = _Repository(MessageRepository)
    outputs = _Repository(OutputRepository)
    turn_states = _Repository(TurnStateRepository)
    turns = _Repository(TurnRepository)
    usage = _Repository(UsageRepository)
    stream_cursors = _Repository(StreamCursorRepository)
    stream_leases = _Repository(StreamLeaseRepository)
    tokens = _Repository(TokenRepository)
    search = _Repository(SearchRepository)
    final_events = _Repository(FinalEventRepository)
    evidence = _Repository(EvidenceRepository)
    tool_results = _Repository(ToolResultRepository)
    user_days = _Repository(UserDayRepository)
    inputs = _Repository(InputRepository)
    commands = _Repository(CommandRepository)
    permissions = _Repository(PermissionRepository)
    runners = _Repository(RunnerRepository)


class SqlUnitOfWork(_SqlRepositories):
    """A unit of work on a SQLAlchemy `Session` (flask-sqlalchemy's per-request one).

    It owns the session's transaction from `__enter__` to `__exit__`, and so it
    refuses to start while the session is already in a transaction: closing or
    rolling back that one would silently discard someone else's work.
    """

    def __init__(self, session, write=False):
        self._session = session
        self._write = write

    def __enter__(self):
        """Begin a fresh transaction (BEGIN IMMEDIATE for a writer) and bind the repositories.

        Raises RuntimeError when the session is already in a transaction, for
        instance when units of work are nested.
        """
        if self._session.in_transaction():
            raise RuntimeError(
                "the session is already in a transaction this unit of work did not start"
                " (nested units of work?)"
            )
        options = {WRITE_OPTION: True} if self._write else {}
        _bind(self, self._session.connection(execution_options=options))
        return self

    def __exit__(self, *exc_info):
        """Roll back what was not committed and release the connection."""
        super().__exit__(*exc_info)
        self._session.close()

    def commit(self):
        """Commit the transaction."""
        self._session.commit()

    def rollback(self):
        """Roll the transaction back."""
        self._session.rollback()


class EngineUnitOfWork(_SqlRepositories):
    """A unit of work on a connection of its own from `engine`'s pool, for writes.

    The ORM session's transaction bookkeeping cost more than a small ingest request's
    SQL (docs/performance.md, Storage); units of work hold no ORM objects, so they need
    none of it. Nor does the transaction go through SQLAlchemy's: `begin(driver connection)`
    starts it on the driver (SQLite: BEGIN IMMEDIATE; None: the driver begins with
    the first statement) and `commit()` commits there, then calls `after_commit()`
    (a fraction of the cost of SQLAlchemy's transaction). A statement run
    through SQLAlchemy (`conn.execute`) joins that transaction. `commit()` ends the
    transaction: use cases commit last (a statement after it would run outside one).
    A writer nested in another of the same context is refused: on SQLite it would wait
    for a lock its own caller holds.
    """

    def __init__(self, engine, write=False, begin=None, after_commit=None):
        self._engine = engine
        self._write = write
        self._begin = begin
        self._after_commit = after_commit
        self._conn = None
        self._outer = None

    def __enter__(self):
        """Check out a connection, begin (BEGIN IMMEDIATE for a writer), bind the repositories."""
        if self._write and _writer.get():
            raise RuntimeError("a write unit of work is already open here (nested units of work?)")
        # Where SQLAlchemy begins (no `begin`), the SQLite `begin` hook reads the option.
        options = {WRITE_OPTION: True} if self._write and self._begin is None else None
        self._conn = DriverFirstConnection(self._engine, options)
        if self._write:
            self._outer = _writer.set(True)
        try:
            if self._begin is not None:
                self._begin(self._conn)
        except BaseException:
            self._release()
            raise
        _bind(self, self._conn)
        return self

    def __exit__(self, *exc_info):
        """Roll back what was not committed and return the connection to the pool."""
        try:
            super().__exit__(*exc_info)
        finally:
            self._release()

    def commit(self):
        """Commit the transaction (SQLAlchemy's, when a statement went through it)."""
        if self._conn.in_transaction():
            self._conn.commit()
        else:
            try:
                self._conn.connection.commit()
            except self._conn.dialect.loaded_dbapi.Error as err:
                raise driver_error(self._conn, err, "COMMIT") from err
        if self._after_commit is not None:
            self._after_commit()

    def rollback(self):
        """Roll the transaction back (through SQLAlchemy, when it began it)."""
        if self._conn.in_transaction():
            self._conn.rollback()
        else:
            self._conn.connection.rollback()

    def _release(self):
        if self._outer is not None:
            _writer.reset(self._outer)
            self._outer = None
        self._conn.close()


class DriverFirstConnection:
    """A pooled DB-API connection, which repositories use as a SQLAlchemy `Connection`.

    Ingest runs its statements on the driver (`dialect.on_driver`), which needs only
    `dialect` and `connection`; the SQLAlchemy Connection, whose making and closing
    cost about as much as the pool checkout itself, is made on
    first use of anything else (`conn.execute(...)`), over the same DB-API connection,
    so it joins the transaction begun there.
    """

    def __init__(self, engine, options=None):
        self.dialect = engine.dialect
        try:
            self.connection = engine.raw_connection()  # checked out of the pool
        except engine.dialect.loaded_dbapi.Error as err:  # as engine.connect() raises it
            raise driver_error(self, err, None, None) from err
        self.sqlalchemy = None
        self._engine = engine
        self._options = options

    def __getattr__(self, name):
        """What a SQLAlchemy Connection has (`execute`, ...), made now if need be."""
        if self.sqlalchemy is None:
            conn = Connection(self._engine, self.connection)
            if self._options:
                conn.execution_options(**self._options)
            self.sqlalchemy = conn
        return getattr(self.sqlalchemy, name)

    def in_transaction(self):
        """True when SQLAlchemy began a transaction (a statement went through it)."""
        return self.sqlalchemy is not None and self.sqlalchemy.in_transaction()

    def close(self):
        """Give the DB-API connection back to the pool (through SQLAlchemy's, if made)."""
        if self.sqlalchemy is not None:
            self.sqlalchemy.close()
        else:
            self.connection.close()


def repositories_on(conn):
    """The repositories bound to `conn`, inside a transaction its caller owns (a
    migration's Python step): it has no commit, and leaving it rolls nothing back."""
    return _bind(_SqlRepositories(), conn)


REPOSITORY_NAMES = [name for name, value in vars(_SqlRepositories).items()
                    if isinstance(value, _Repository)]


def _bind(uow, conn):
    """Bind `uow`'s repositories to `conn`, forgetting any made on an earlier connection."""
    if uow._conn_of_repositories is not None:  # bound before: forget that connection's
        state = vars(uow)
        for name in REPOSITORY_NAMES:
            state.pop(name, None)
    uow._conn_of_repositories = conn
    return uow
