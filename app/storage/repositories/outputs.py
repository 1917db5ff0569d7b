"""SQL for `remote_runtime_outputs`, the live output buffer."""
from sqlalchemy import bindparam
from sqlalchemy import text

from app.core.records import Chunk
from app.formats.output_frames import event_json
from app.storage.repositories.dialect import on_driver
from app.storage.repositories.dialect import on_driver_within

# The BETWEEN bound lets a planner walk (session_id, producer_seq) over just the
# batch's seq range; with the IN list alone PostgreSQL scanned the whole session.
SELECT_KNOWN_SEQS = text(
    "SELECT producer_seq, stream, payload FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND producer_seq BETWEEN :lowest AND :highest"
    " AND producer_seq IN :seqs"
).bindparams(bindparam("seqs", expanding=True))
# What replay reads of each row: its index and the stored JSON of its event.
# bench/stream.py's raw baseline selects these same columns.
REPLAY_COLUMNS = "event_index, event_json"
# Positional markers ({m}) filled in with the driver's style: read on the raw cursor.
SELECT_AFTER = (
    f"SELECT {REPLAY_COLUMNS} FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} ORDER BY event_index LIMIT {m}"
)
# The byte budget of a page (issue 29): the sizes of the same rows, read first on
# PostgreSQL (dialect.on_driver_within; OCTET_LENGTH reads no value). A row stored
# without its event JSON counts its payload.
SIZES_AFTER = (
    "SELECT COALESCE(OCTET_LENGTH(event_json), OCTET_LENGTH(payload)) FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} ORDER BY event_index LIMIT {m}"
)
FEED_SIZES_AFTER = (
    "SELECT COALESCE(OCTET_LENGTH(event_json), OCTET_LENGTH(payload))"
    " + COALESCE(OCTET_LENGTH(live_events), 0) FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} ORDER BY event_index LIMIT {m}"
)
LIVE_SIZES_AFTER = (
    "SELECT OCTET_LENGTH(live_events) FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} AND live_events IS NOT NULL"
    " ORDER BY event_index LIMIT {m}"
)
# Rows stored without their event JSON (before migration 0010, or by an instance
# not yet upgraded), within one page's range: replay builds their JSON itself.
# A partial index holds just these rows, so for a page with none this is one probe.
SELECT_UNFRAMED = (
    "SELECT event_index, stream, payload, created_at FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index BETWEEN {m} AND {m} AND event_json IS NULL"
)
# What the live hub reads once for every follower of a session: both feeds' columns.
SELECT_FEEDS_AFTER = (
    "SELECT event_index, event_json, live_events FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} ORDER BY event_index LIMIT {m}"
)
# The live events (GET .../events) of the rows that have any, after a cursor.
SELECT_LIVE_AFTER = (
    "SELECT event_index, live_events FROM remote_runtime_outputs"
    " WHERE session_id = {m} AND event_index > {m} AND live_events IS NOT NULL"
    " ORDER BY event_index LIMIT {m}"
)
SELECT_LAST_LIVE = text(
    "SELECT event_index, live_events FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND live_events IS NOT NULL"
    " ORDER BY event_index DESC LIMIT 1"
)
# A failed session's last stderr lines, newest first (the partial index of migration 0026).
SELECT_LAST_STDERR = text(
    "SELECT payload FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND stream = 'stderr'"
    " ORDER BY event_index DESC LIMIT :limit"
)
SELECT_OLDEST = text(
    "SELECT MIN(event_index) FROM remote_runtime_outputs WHERE session_id = :session_id"
)
# Pruning walks each session's buffer from its oldest row, in event order (the
# primary key), so no index on expires_at has to be kept up to date by every write.
# A session's rows expire in the order they came (one retention setting), so its
# expired rows are a prefix; after the retention was shortened, newer rows wait for
# the older ones to expire: kept longer, never deleted early.
SELECT_EXPIRED_HEADS = text(
    "SELECT s.session_id, (SELECT MIN(o.event_index) FROM remote_runtime_outputs o"
    " WHERE o.session_id = s.session_id) AS oldest FROM agent_sessions s WHERE ("
    " SELECT o.expires_at FROM remote_runtime_outputs o WHERE o.session_id = s.session_id"
    " ORDER BY o.event_index LIMIT 1) < :now"
)
# The first row still retained within the next `limit` rows of a session.
SELECT_FIRST_RETAINED = text(
    "SELECT event_index FROM remote_runtime_outputs WHERE session_id = :session_id"
    " AND event_index >= :oldest AND event_index < :bound AND expires_at >= :now"
    " ORDER BY event_index LIMIT 1"
)
DELETE_RANGE = text(
    "DELETE FROM remote_runtime_outputs WHERE session_id = :session_id"
    " AND event_index >= :oldest AND event_index < :upto"
)
# The evidence backfill (migration 0018) reads every retained line again, page by page.
SELECT_SESSIONS_WITH_OUTPUT = text(
    "SELECT s.session_id, s.provider, s.status FROM agent_sessions s WHERE EXISTS"
    " (SELECT 1 FROM remote_runtime_outputs o WHERE o.session_id = s.session_id)"
    " ORDER BY s.session_id"
)
SELECT_LINES_AFTER = text(
    "SELECT event_index, stream, payload FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND event_index > :after ORDER BY event_index LIMIT :limit"
)
INSERT_COLUMNS = ("session_id, event_index, stream, payload, producer_seq, created_at, expires_at,"
                  " event_json, live_events")
INSERT_MANY = f"INSERT INTO remote_runtime_outputs ({INSERT_COLUMNS}) VALUES ({', '.join(['{m}'] * 9)})"


class OutputRepository:
    def __init__(self, conn):
        self.conn = conn

    def known_seqs(self, session_id, seqs):
        """{seq: the stored line, as a Chunk} of those of `seqs` this session already
        stored (read when a runner re-sends: its lines are compared with these)."""
        if not seqs:
            return {}
        params = {"session_id": session_id, "seqs": list(seqs),
                  "lowest": min(seqs), "highest": max(seqs)}
        rows = self.conn.execute(SELECT_KNOWN_SEQS, params)
        return {seq: Chunk(payload, stream, seq) for seq, stream, payload in rows}

    def list_after(self, session_id, after, limit, max_bytes=0):
        """Up to `limit` buffered events with event_index > `after`, in order, as
        (event_index, event JSON) pairs; with `max_bytes`, no more than fit in that
        many (the first always comes): (pairs, True when some were left out)."""
        # The replay hot path: plain tuples from the driver's cursor, on this
        # unit of work's connection and transaction, passed on as they come.
        rows, cut = on_driver_within(self.conn, SELECT_AFTER, (session_id, after, limit), max_bytes,
                                     _replay_size, SIZES_AFTER)
        # One indexed probe per page rather than a look at every row.
        unframed = rows and self._fetch(SELECT_UNFRAMED, (session_id, rows[0][0], rows[-1][0]))
        if unframed:
            built = {row[0]: event_json(*row) for row in unframed}
            rows = [(index, built.get(index, data)) for index, data in rows]
        return rows, cut

    def list_feeds_after(self, session_id, after, limit, max_bytes=0):
        """Up to `limit` rows with event_index > `after`, in order, as (event_index,
        event JSON, stored live events or None): what both live feeds send. With
        `max_bytes`, no more than fit in that many (the first always comes)."""
        rows, _ = on_driver_within(self.conn, SELECT_FEEDS_AFTER, (session_id, after, limit),
                                   max_bytes, _feed_size, FEED_SIZES_AFTER)
        unframed = rows and self._fetch(SELECT_UNFRAMED, (session_id, rows[0][0], rows[-1][0]))
        if unframed:
            built = {row[0]: event_json(*row) for row in unframed}
            rows = [(index, built.get(index, data), live) for index, data, live in rows]
        return rows

    def list_live_after(self, session_id, after, limit, max_bytes=0):
        """Up to `limit` (event_index, stored live events) pairs of the rows after
        `after` that have live events, in order; with `max_bytes`, no more than fit in
        that many (the first always comes): (pairs, True when some were left out)."""
        return on_driver_within(self.conn, SELECT_LIVE_AFTER, (session_id, after, limit),
                                max_bytes, _live_size, LIVE_SIZES_AFTER)

    def last_live(self, session_id):
        """(event_index, stored live events) of the last row that has any, or None."""
        row = self.conn.execute(SELECT_LAST_LIVE, {"session_id": session_id}).first()
        return (row[0], row[1]) if row else None

    def _fetch(self, sql, params):
        return on_driver(self.conn, sql, params)

    def buffered_sessions(self):
        """(session_id, provider, status) of every session with rows in the buffer."""
        return [tuple(row) for row in self.conn.execute(SELECT_SESSIONS_WITH_OUTPUT)]

    def list_lines_after(self, session_id, after, limit):
        """Up to `limit` (event_index, stream, payload) rows after `after`, in order."""
        rows = self.conn.execute(SELECT_LINES_AFTER, {"session_id": session_id, "after": after,
                                                      "limit": limit})
        return [tuple(row) for row in rows]

    def last_stderr(self, session_id, limit):
        """The session's last `limit` stderr lines still buffered, oldest first."""
        rows = self.conn.execute(SELECT_LAST_STDERR, {"session_id": session_id, "limit": limit})
        return [row[0] for row in rows][::-1]

    def oldest_index(self, session_id):
        """The lowest event_index still retained, or None when the buffer is empty."""
        return self.conn.execute(SELECT_OLDEST, {"session_id": session_id}).scalar()

    def delete_expired(self, now, limit):
        """Delete up to `limit` rows that expired before `now`, each session's oldest
        first; returns how many went."""
        deleted = 0
        for session_id, oldest in self.conn.execute(SELECT_EXPIRED_HEADS, {"now": now}).all():
            if deleted >= limit:
                break
            bound = oldest + (limit - deleted)
            params = {"session_id": session_id, "oldest": oldest, "now": now}
            retained = self.conn.execute(SELECT_FIRST_RETAINED, {**params, "bound": bound}).scalar()
            deleted += self.conn.execute(
                DELETE_RANGE, {**params, "upto": bound if retained is None else retained}).rowcount
        return deleted

    def add_many(self, session_id, outputs, expires_at, live_events=()):
        """Store already-numbered outputs (`StoredOutput`s) in one executemany;
        `live_events`, when given, holds each output's stored live events (or None)."""
        if not outputs:
            return
        live_events = live_events or [None] * len(outputs)
        # turnlog's hottest statement goes straight to the driver, skipping
        # SQLAlchemy's per-row parameter processing.
        on_driver(self.conn, INSERT_MANY, [
            (session_id, out.event_index, out.stream, out.payload, out.producer_seq,
             out.created_at, expires_at,
             event_json(out.event_index, out.stream, out.payload, out.created_at), live)
            for out, live in zip(outputs, live_events)], many=True)


def _replay_size(row):
    return len(row[1]) if row[1] is not None else 0


def _feed_size(row):
    return (len(row[1]) if row[1] is not None else 0) + (len(row[2]) if row[2] is not None else 0)


def _live_size(row):
    return len(row[1])
