"""SQL for `session_evidence`: the shell commands agents ran, kept with their outcome; and
for `session_tool_results`: every tool call of a closed turn, with its result."""
import json

from sqlalchemy import text

from app.core.records import Evidence
from app.core.records import ToolResult
from app.storage.repositories.dialect import on_driver
from app.storage.repositories.dialect import placeholders

INSERT_COLUMNS = ("session_id, turn_id, evidence_id, command, exit_code, is_error,"
                  " first_event_index, last_event_index, output_head, output_tail, output_bytes,"
                  " test_summary, created_at")
# One row of VALUES per item; a (turn, call) stored already is skipped, so a replayed
# turn is a no-op.
INSERT_IF_NEW = (
    f"INSERT INTO session_evidence ({INSERT_COLUMNS}) VALUES {{rows}}"
    " ON CONFLICT (session_id, turn_id, evidence_id) DO NOTHING RETURNING id"
)
BATCH_ROWS = 500  # rows per statement: well within every driver's parameter limit
SELECT_PAGE = text(
    f"SELECT id, {INSERT_COLUMNS} FROM session_evidence"
    " WHERE session_id = :session_id AND id > :after ORDER BY id LIMIT :limit"
)


class EvidenceRepository:
    """Writes and pages evidence rows on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_many(self, session_id, items, now):
        """Store evidence items (dicts of app/transcript/evidence.py) in one statement, in
        order, each unless stored already; returns how many were new. On the driver's
        cursor, as the transcript rows are: this runs on the ingest path."""
        if not items:
            return 0
        row = f"({placeholders(self.conn, 13)})"
        added = 0
        for at in range(0, len(items), BATCH_ROWS):
            batch = items[at:at + BATCH_ROWS]
            sql = INSERT_IF_NEW.format(rows=", ".join([row] * len(batch)))
            added += len(on_driver(self.conn, sql,
                                   [value for item in batch for value in _values(session_id, item, now)]))
        return added

    def list_page(self, session_id, after, limit):
        """Evidence with id > `after`, in the order the commands ran (write order)."""
        rows = self.conn.execute(
            SELECT_PAGE, {"session_id": session_id, "after": after, "limit": limit}).mappings()
        return [_to_evidence(row) for row in rows]


def _values(session_id, item, now):
    first, last = item["event_range"]
    summary = item["test_summary"]
    return (session_id, item["turn_id"], item["evidence_id"], item["command"], item["exit_code"],
            1 if item["is_error"] else 0, first, last, item["output_head"], item["output_tail"],
            item["output_bytes"], json.dumps(summary) if summary is not None else None, now)


def _to_evidence(row):
    return Evidence(
        id=row["id"], session_id=row["session_id"], evidence_id=row["evidence_id"],
        turn_id=row["turn_id"], command=row["command"], exit_code=row["exit_code"],
        is_error=bool(row["is_error"]),
        event_range=[row["first_event_index"], row["last_event_index"]],
        output_head=row["output_head"], output_tail=row["output_tail"],
        output_bytes=row["output_bytes"],
        test_summary=json.loads(row["test_summary"]) if row["test_summary"] else None,
        created_at=row["created_at"])


TOOL_COLUMNS = ("session_id, turn_id, tool_use_id, tool_name, tool_input, has_result, is_error,"
                " output, output_bytes, truncated, message_id, after_message_id, created_at")
TOOL_INSERT_IF_NEW = (
    f"INSERT INTO session_tool_results ({TOOL_COLUMNS}) VALUES {{rows}}"
    " ON CONFLICT (session_id, turn_id, tool_use_id) DO NOTHING RETURNING id"
)
# The results of a page of messages: those of its rows (message_id in the page's range)
# and those of the turns without a row that sit among them (after_message_id in
# [after, before)), in write order.
SELECT_OF_MESSAGES = text(
    f"SELECT id, {TOOL_COLUMNS} FROM session_tool_results WHERE session_id = :session_id"
    " AND message_id >= :first AND message_id <= :last ORDER BY id LIMIT :limit"
)
SELECT_WITHOUT_ROW = text(
    f"SELECT id, {TOOL_COLUMNS} FROM session_tool_results WHERE session_id = :session_id"
    " AND after_message_id >= :after AND after_message_id < :before AND message_id IS NULL"
    " ORDER BY after_message_id, id LIMIT :limit"
)


class ToolResultRepository:
    """Writes and reads tool results on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_many(self, session_id, items, now):
        """Store tool result items (dicts of evidence.tool_result_items, with their
        message_id and after_message_id) in order, each unless stored already; returns
        how many were new. On the driver's cursor: this runs on the ingest path."""
        if not items:
            return 0
        row = f"({placeholders(self.conn, 13)})"
        added = 0
        for at in range(0, len(items), BATCH_ROWS):
            batch = items[at:at + BATCH_ROWS]
            sql = TOOL_INSERT_IF_NEW.format(rows=", ".join([row] * len(batch)))
            added += len(on_driver(self.conn, sql,
                                   [value for item in batch for value in _tool_values(session_id, item, now)]))
        return added

    def of_messages(self, session_id, first, last, limit):
        """The results of the rows with ids in [first, last], in write order."""
        rows = self.conn.execute(SELECT_OF_MESSAGES, {"session_id": session_id, "first": first,
                                                      "last": last, "limit": limit}).mappings()
        return [_to_tool_result(row) for row in rows]

    def without_row(self, session_id, after, before, limit):
        """The results of turns that wrote no row, placed after a row (or 0) in
        [after, before), in transcript order."""
        rows = self.conn.execute(SELECT_WITHOUT_ROW, {"session_id": session_id, "after": after,
                                                      "before": before, "limit": limit}).mappings()
        return [_to_tool_result(row) for row in rows]


def _tool_values(session_id, item, now):
    tool_input = item["input"]
    return (session_id, item["turn_id"], item["tool_use_id"], item["name"],
            json.dumps(tool_input, ensure_ascii=False, default=str) if item["name"] is not None else None,
            1 if item["has_result"] else 0, 1 if item["is_error"] else 0, item["output"],
            item["output_bytes"], 1 if item["truncated"] else 0, item["message_id"],
            item["after_message_id"], now)


def _to_tool_result(row):
    return ToolResult(
        id=row["id"], session_id=row["session_id"], turn_id=row["turn_id"],
        tool_use_id=row["tool_use_id"], name=row["tool_name"],
        input=json.loads(row["tool_input"]) if row["tool_input"] is not None else None,
        has_result=bool(row["has_result"]), is_error=bool(row["is_error"]), output=row["output"],
        output_bytes=row["output_bytes"], truncated=bool(row["truncated"]),
        message_id=row["message_id"], after_message_id=row["after_message_id"],
        created_at=row["created_at"])
