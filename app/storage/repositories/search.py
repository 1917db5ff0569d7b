"""SQL for full-text search over transcript rows: FTS5 on SQLite, tsvector on PostgreSQL.

Both match every word (stemmed) of the query, newest message first, keyset paged
by message id, optionally only within one owner's sessions; the snippet marks
each match with ** on both sides. PostgreSQL's `search_vector` covers only the
first 100,000 characters of a row (migration 0009), and the headline reads the same
prefix: the match is there, and parsing a megabyte row per hit would cost for nothing.
"""
from sqlalchemy import text

from app.services.models import SearchHit
from app.storage.repositories.dialect import choose

# Characters of a row PostgreSQL indexes: the bound in migrations/0009's generated column.
INDEXED_PREFIX = 100_000
COLUMNS = "m.id, m.session_id, m.role, m.timestamp, s.session_type, s.user_id"
SQLITE = (
    f"SELECT {COLUMNS},"
    " snippet(session_messages_fts, 0, '**', '**', '…', 24) AS snippet"
    " FROM session_messages_fts"
    " JOIN session_messages m ON m.id = session_messages_fts.rowid"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " WHERE session_messages_fts MATCH :query{filters}"
    " ORDER BY m.id DESC LIMIT :limit"
)
POSTGRESQL = (
    f"SELECT {COLUMNS},"
    f" ts_headline('english', left(m.content, {INDEXED_PREFIX}), q.query,"
    " 'StartSel=**, StopSel=**, MaxWords=30, MinWords=10, MaxFragments=1') AS snippet"
    " FROM session_messages m"
    " CROSS JOIN plainto_tsquery('english', :query) AS q(query)"
    " JOIN agent_sessions s ON s.session_id = m.session_id"
    " WHERE m.search_vector @@ q.query{filters}"
    " ORDER BY m.id DESC LIMIT :limit"
)
FILTERS = {"owner": " AND s.user_id = :owner", "before": " AND m.id < :before"}


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

    def find(self, words, limit, *, owner=None, before=None):
        """Messages whose text holds every one of `words`, newest first."""
        params = {"query": self._query(words), "limit": limit}
        if owner is not None:
            params["owner"] = owner
        if before is not None:
            params["before"] = before
        statement = choose(self.conn, STATEMENTS)[(owner is not None, before is not None)]
        return [SearchHit(**row) for row in self.conn.execute(statement, params).mappings()]

    def _query(self, words):
        # FTS5: each word a quoted string, which reads no operator or column name;
        # PostgreSQL's plainto_tsquery reads plain text and ANDs its words.
        return choose(self.conn, {"sqlite": " ".join(f'"{word}"' for word in words),
                                  "postgresql": " ".join(words)})
