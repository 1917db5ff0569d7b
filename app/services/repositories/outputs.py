"""SQL for `remote_runtime_outputs`, the live output buffer."""
from sqlalchemy import bindparam
from sqlalchemy import text

SELECT_KNOWN_SEQS = text(
    "SELECT producer_seq FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND producer_seq IN :seqs"
).bindparams(bindparam("seqs", expanding=True))
SELECT_KNOWN_LINE_IDS = text(
    "SELECT DISTINCT line_id FROM remote_runtime_outputs"
    " WHERE session_id = :session_id AND line_id IN :line_ids"
).bindparams(bindparam("line_ids", expanding=True))
INSERT = text(
    "INSERT INTO remote_runtime_outputs (session_id, event_index, stream, payload,"
    " producer_seq, line_id, created_at, expires_at) VALUES (:session_id, :event_index,"
    " :stream, :payload, :producer_seq, :line_id, :created_at, :expires_at)"
)


class OutputRepository:
    def __init__(self, conn):
        self.conn = conn

    def known_seqs(self, session_id, seqs):
        """Which of `seqs` this session already stored."""
        if not seqs:
            return set()
        rows = self.conn.execute(SELECT_KNOWN_SEQS, {"session_id": session_id, "seqs": list(seqs)})
        return {row[0] for row in rows}

    def known_line_ids(self, session_id, line_ids):
        """Which of these line ids arrived in this session before (within retention)."""
        if not line_ids:
            return set()
        rows = self.conn.execute(
            SELECT_KNOWN_LINE_IDS, {"session_id": session_id, "line_ids": list(line_ids)}
        )
        return {row[0] for row in rows}

    def add_many(self, session_id, outputs, expires_at):
        """Store already-numbered outputs (`StoredOutput`s) in one statement batch."""
        if not outputs:
            return
        self.conn.execute(
            INSERT,
            [
                {
                    "session_id": session_id,
                    "event_index": out.event_index,
                    "stream": out.stream,
                    "payload": out.payload,
                    "producer_seq": out.producer_seq,
                    "line_id": out.line_id,
                    "created_at": out.created_at,
                    "expires_at": expires_at,
                }
                for out in outputs
            ],
        )
