"""SQL for `session_messages`, the durable transcript."""
from sqlalchemy import bindparam
from sqlalchemy import text

from app.core.records import Message
from app.core.records import fitting
from app.formats import fast_json
from app.storage.repositories.dialect import on_driver

COLUMNS = "id, session_id, role, content, content_blocks, metadata, source, turn_key, timestamp"
# The unique (session_id, turn_key) makes a replayed turn a no-op, not a second row.
# One row of VALUES per draft ({rows}, built per call), positional markers ({m}) in
# the driver's style: run on the raw cursor (see insert_new).
INSERT_IF_NEW = (
    "INSERT INTO session_messages (session_id, role, content, content_blocks, metadata,"
    " source, turn_key, timestamp) VALUES {rows}"
    " ON CONFLICT (session_id, turn_key) DO NOTHING RETURNING id, turn_key"
)
DRAFT_ROW = "({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m})"
BATCH_ROWS = 100  # drafts per statement: well within every driver's parameter limit
SELECT_PAGE = text(
    f"SELECT {COLUMNS} FROM session_messages"
    " WHERE session_id = :session_id AND id > :after ORDER BY id LIMIT :limit"
)
# The `limit` messages just before `before`, newest first (the caller puts them in order).
SELECT_BEFORE = text(
    f"SELECT {COLUMNS} FROM session_messages"
    " WHERE session_id = :session_id AND id < :before ORDER BY id DESC LIMIT :limit"
)
# The byte budget of a page (issue 29): first each row's size as stored (its text
# columns, in characters), then the rows that fit, by id range: a page of big rows is
# never read whole only to be cut. (The API leaves metadata.content_blocks out, so
# what is sent is at most about this.)
ROW_SIZE = "LENGTH(content) + LENGTH(content_blocks) + LENGTH(metadata)"
SELECT_SIZES_AFTER = text(
    f"SELECT id, {ROW_SIZE} FROM session_messages"
    " WHERE session_id = :session_id AND id > :after ORDER BY id LIMIT :limit"
)
SELECT_SIZES_BEFORE = text(
    f"SELECT id, {ROW_SIZE} FROM session_messages"
    " WHERE session_id = :session_id AND id < :before ORDER BY id DESC LIMIT :limit"
)
SELECT_RANGE = text(
    f"SELECT {COLUMNS} FROM session_messages"
    " WHERE session_id = :session_id AND id >= :first AND id <= :last ORDER BY id"
)
SELECT_ALL = text(f"SELECT {COLUMNS} FROM session_messages WHERE session_id = :session_id ORDER BY id")
SELECT_KEY = text("SELECT 1 FROM session_messages WHERE session_id = :session_id AND turn_key = :turn_key")
OPENER_CHARS = 400  # enough for a title line; a row may hold megabytes
# Per session, the id of its first row of one kind: a correlated subquery that
# walks (session_id, id) and stops at the first match, however long the session.
FIRST_ID = (
    "SELECT (SELECT m.id FROM session_messages m WHERE m.session_id = s.session_id"
    " AND m.role = '{role}' AND {condition} ORDER BY m.id LIMIT 1)"
    " FROM agent_sessions s WHERE s.session_id IN :session_ids"
)
SELECT_OPENERS = text(
    f"SELECT id, session_id, role, SUBSTR(content, 1, {OPENER_CHARS}) AS content,"
    " '[]' AS content_blocks, '{}' AS metadata, source, turn_key, timestamp"
    " FROM session_messages WHERE id IN ("
    + FIRST_ID.format(role="system", condition="m.content LIKE :init_prefix")
    + " UNION ALL "
    + FIRST_ID.format(role="assistant", condition="m.content <> ''")
    + ") ORDER BY id"
).bindparams(bindparam("session_ids", expanding=True))
SELECT_IDS_OF_TURNS = text(
    "SELECT turn_key, id FROM session_messages WHERE session_id = :session_id"
    " AND turn_key IN :turn_keys"
).bindparams(bindparam("turn_keys", expanding=True))
SELECT_NEWEST_BEFORE = text(
    "SELECT MAX(id) FROM session_messages WHERE session_id = :session_id AND id < :before")
INIT_PREFIX = "Session started:%"  # the system note each provider's init line leaves


class MessageRepository:
    """Reads and writes transcript rows on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def insert_new(self, session_id, drafts, timestamp):
        """Insert each draft unless its turn is already stored; returns (row id, draft)
        for each new one, in the drafts' order.

        One statement for up to BATCH_ROWS drafts, on the driver's cursor of this unit
        of work's connection: ingest writes the turns a request closes together. Both
        databases number a multi-row VALUES in its order, so ids follow write order; a
        draft is new when RETURNING hands its turn key back (a key repeated within
        the drafts counts once, the first time).
        """
        unique, seen = [], set()
        for draft in drafts:
            if draft.turn_key not in seen:
                seen.add(draft.turn_key)
                unique.append(draft)
        added = []
        for at in range(0, len(unique), BATCH_ROWS):
            batch = unique[at:at + BATCH_ROWS]
            sql = INSERT_IF_NEW.format(rows=", ".join([DRAFT_ROW] * len(batch)))
            params = [value for draft in batch for value in (
                session_id, draft.role, draft.content, fast_json.dumps(draft.content_blocks),
                fast_json.dumps(draft.metadata), draft.source, draft.turn_key, timestamp)]
            ids = dict((key, row_id) for row_id, key in on_driver(self.conn, sql, params))
            added.extend((ids[draft.turn_key], draft) for draft in batch if draft.turn_key in ids)
        return added

    def has_turn_key(self, session_id, turn_key):
        """True when a row of this turn key is stored for the session."""
        found = self.conn.execute(SELECT_KEY, {"session_id": session_id, "turn_key": turn_key})
        return found.first() is not None

    def list_all(self, session_id):
        """Every message of the session, in write order."""
        rows = self.conn.execute(SELECT_ALL, {"session_id": session_id}).mappings()
        return [_to_message(row) for row in rows]

    def list_page(self, session_id, after, limit):
        """Messages in write order with id > `after`."""
        rows = self.conn.execute(
            SELECT_PAGE, {"session_id": session_id, "after": after, "limit": limit}
        ).mappings()
        return [_to_message(row) for row in rows]

    def list_before(self, session_id, before, limit):
        """The last `limit` messages with id < `before`, in write order."""
        rows = self.conn.execute(
            SELECT_BEFORE, {"session_id": session_id, "before": before, "limit": limit}
        ).mappings()
        return [_to_message(row) for row in rows][::-1]

    def sized_page(self, session_id, after, limit, max_bytes):
        """list_page, and no more rows than fit in `max_bytes` (the first always comes):
        (messages, True when rows within `limit` were left out for bytes)."""
        sizes = self.conn.execute(SELECT_SIZES_AFTER, {"session_id": session_id, "after": after,
                                                       "limit": limit}).all()
        count = fitting([size or 0 for _, size in sizes], max_bytes)
        if not count:
            return [], False
        return self._range(session_id, sizes[0][0], sizes[count - 1][0]), count < len(sizes)

    def sized_before(self, session_id, before, limit, max_bytes):
        """list_before, and no more of the newest rows than fit in `max_bytes` (the
        newest always comes): (messages in write order, True when rows were left out)."""
        sizes = self.conn.execute(SELECT_SIZES_BEFORE, {"session_id": session_id, "before": before,
                                                        "limit": limit}).all()
        count = fitting([size or 0 for _, size in sizes], max_bytes)
        if not count:
            return [], False
        return self._range(session_id, sizes[count - 1][0], sizes[0][0]), count < len(sizes)

    def _range(self, session_id, first, last):
        rows = self.conn.execute(SELECT_RANGE, {"session_id": session_id, "first": first,
                                                "last": last}).mappings()
        return [_to_message(row) for row in rows]

    def openers(self, session_ids):
        """{session_id: [its first init note, its first assistant row with text]}, each
        row present only if the session has one, its content cut to OPENER_CHARS."""
        found = {}
        rows = self.conn.execute(SELECT_OPENERS, {"session_ids": list(session_ids),
                                                  "init_prefix": INIT_PREFIX}).mappings()
        for row in rows:
            message = _to_message(row)
            found.setdefault(message.session_id, []).append(message)
        return found

    def newest_before(self, session_id, before):
        """The id of the session's newest row below `before` (0: none)."""
        found = self.conn.execute(SELECT_NEWEST_BEFORE, {"session_id": session_id,
                                                         "before": before}).scalar()
        return found or 0

    def ids_of_turns(self, session_id, turn_keys):
        """{turn key: id of the row it wrote} for those of `turn_keys` that wrote one."""
        if not turn_keys:
            return {}
        rows = self.conn.execute(SELECT_IDS_OF_TURNS, {"session_id": session_id,
                                                       "turn_keys": list(turn_keys)})
        return {key: row_id for key, row_id in rows}


def _to_message(row):
    """A stored row as a Message. The row keeps its blocks twice (`content_blocks` and
    `metadata.content_blocks`, docs/transcript-contract.md); a Message carries them once,
    in `content_blocks`: every reader (API, viewer, exports) gets each text once."""
    data = dict(row)
    data["content_blocks"] = fast_json.loads(data["content_blocks"] or "[]")
    metadata = fast_json.loads(data["metadata"] or "{}")
    if isinstance(metadata, dict):
        metadata.pop("content_blocks", None)
    data["metadata"] = metadata
    return Message(**data)
