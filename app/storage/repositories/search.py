"""SQL for full-text search over transcript rows: FTS5 on SQLite, tsvector on PostgreSQL.

Both match every word (stemmed) of the query, newest message first, keyset paged
by message id, optionally only within one owner's sessions; the snippet marks
each match with ** on both sides.

The work per query is bounded. The page's ids are chosen first and snippets are
made for those rows only. A snippet reads at most SNIPPET_PREFIX characters of its
row: FTS5's snippet() costs time that grows faster than the row (docs/performance.md,
Text parsing), so a longer row comes back
with its first characters as `head` and the service makes its snippet. PostgreSQL's
`search_vector` covers the same prefix (migration add_message_search), and its
headline reads it. Each query also runs under a time budget, past which it is
interrupted (SQLite: a progress handler; PostgreSQL: statement_timeout) and
`SearchTimeout` raised.
"""
import time
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.core.errors import SearchTimeout
from app.core.records import SearchHit
from app.storage.repositories.dialect import choose

# Characters of a row a snippet reads; PostgreSQL indexes the same prefix (the bound
# in migration add_message_search's generated column).
SNIPPET_PREFIX = 100_000
COLUMNS = "m.id, m.session_id, m.role, m.timestamp, s.session_type, s.user_id"
# The page: ids only, so no snippet is made for a row past the LIMIT.
SQLITE_PAGE = (
    "SELECT m.id FROM session_messages_fts"
    " JOIN session_messages m ON m.id = session_messages_fts.rowid"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " WHERE session_messages_fts MATCH :query{filters}"
    " ORDER BY m.id DESC LIMIT :limit"
)
SQLITE = (
    f"SELECT {COLUMNS},"
    f" CASE WHEN length(m.content) <= {SNIPPET_PREFIX}"
    "  THEN snippet(session_messages_fts, 0, '**', '**', '…', 24) END AS snippet,"
    f" CASE WHEN length(m.content) > {SNIPPET_PREFIX}"
    f"  THEN substr(m.content, 1, {SNIPPET_PREFIX}) END AS head"
    " FROM session_messages_fts"
    " JOIN session_messages m ON m.id = session_messages_fts.rowid"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " WHERE session_messages_fts MATCH :query"
    f" AND session_messages_fts.rowid IN ({SQLITE_PAGE})"
    " ORDER BY m.id DESC"
)
POSTGRESQL_PAGE = (
    "SELECT m.id FROM session_messages m"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " WHERE m.search_vector @@ plainto_tsquery('english', :query){filters}"
    " ORDER BY m.id DESC LIMIT :limit"
)
POSTGRESQL = (
    f"SELECT {COLUMNS},"
    f" ts_headline('english', left(m.content, {SNIPPET_PREFIX}), q.query,"
    " 'StartSel=**, StopSel=**, MaxWords=30, MinWords=10, MaxFragments=1') AS snippet,"
    " NULL AS head"
    f" FROM ({POSTGRESQL_PAGE}) AS page"
    " JOIN session_messages m ON m.id = page.id"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " CROSS JOIN plainto_tsquery('english', :query) AS q(query)"
    " ORDER BY m.id DESC"
)
FILTERS = {"owner": " AND s.user_id = :owner", "before": " AND m.id < :before"}
# SQLite calls the progress handler every this many virtual-machine steps (well
# under a millisecond each time), so an interrupt lands soon after the budget.
PROGRESS_STEPS = 1000


def _statements(template):
    """Every combination of the optional filters, built once."""
    combos = {}
    for owner in (False, True):
        for before in (False, True):
            filters = (FILTERS["owner"] if owner else "") + (FILTERS["before"] if before else "")
            combos[(owner, before)] = text(template.format(filters=filters))
    return combos


STATEMENTS = {"sqlite": _statements(SQLITE), "postgresql": _statements(POSTGRESQL)}


class SearchRepository:
    def __init__(self, conn):
        self.conn = conn

    def find(self, words, limit, *, owner=None, before=None, budget_seconds=None):
        """Messages whose text holds every one of `words`, newest first; SearchTimeout
        when the query takes longer than `budget_seconds` (None: no budget)."""
        params = {"query": self._query(words), "limit": limit}
        if owner is not None:
            params["owner"] = owner
        if before is not None:
            params["before"] = before
        statement = choose(self.conn, STATEMENTS)[(owner is not None, before is not None)]
        with self._budget(budget_seconds):
            rows = self.conn.execute(statement, params).mappings().all()
        return [SearchHit(**row) for row in rows]

    def _query(self, words):
        # FTS5: each word a quoted string, which reads no operator or column name;
        # PostgreSQL's plainto_tsquery reads plain text and ANDs its words.
        return choose(self.conn, {"sqlite": " ".join(f'"{word}"' for word in words),
                                  "postgresql": " ".join(words)})

    @contextmanager
    def _budget(self, seconds):
        if seconds is None:
            yield
            return
        limit = choose(self.conn, {"sqlite": self._sqlite_budget, "postgresql": self._postgresql_budget})
        try:
            with limit(seconds):
                yield
        except OperationalError as err:
            if not _was_cancelled(err):
                raise
            raise SearchTimeout(
                f"the search took longer than its budget of {seconds:g} s and was stopped;"
                " use more or rarer words", {"budget_seconds": seconds}) from None

    @contextmanager
    def _sqlite_budget(self, seconds):
        driver = self.conn.connection.driver_connection
        deadline = time.monotonic() + seconds
        driver.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
        try:
            yield
        finally:
            driver.set_progress_handler(None, PROGRESS_STEPS)

    @contextmanager
    def _postgresql_budget(self, seconds):
        # For this transaction only (set_config's third argument: is_local).
        milliseconds = str(max(1, round(seconds * 1000)))
        self.conn.execute(text("SELECT set_config('statement_timeout', :ms, true)"), {"ms": milliseconds})
        yield


def _was_cancelled(err):
    """True when the database stopped the statement because of the budget."""
    return getattr(err.orig, "sqlstate", None) == "57014" or "interrupted" in str(err.orig)
