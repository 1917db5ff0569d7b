"""SQL for `usage_report_receipts`: each usage report is counted once."""
from sqlalchemy import text

INSERT_IF_NEW = text(
    "INSERT INTO usage_report_receipts (session_id, report_id, input_tokens,"
    " output_tokens, requests, received_at) VALUES (:session_id, :report_id,"
    " :input_tokens, :output_tokens, :requests, :now)"
    " ON CONFLICT (session_id, report_id) DO NOTHING"
)


class UsageRepository:
    """Records usage report receipts on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_if_new(self, session_id, report_id, input_tokens, output_tokens, requests, now):
        """Record the report; False when this report_id was already counted."""
        result = self.conn.execute(
            INSERT_IF_NEW,
            {
                "session_id": session_id,
                "report_id": report_id,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "requests": requests,
                "now": now,
            },
        )
        return result.rowcount == 1
