"""SQL for `usage_report_receipts` (each usage report is counted once) and
`user_day_usage` (what each user's sessions took on each UTC day, for the quotas)."""
from sqlalchemy import text

from app.storage.repositories.dialect import on_driver

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


# One statement per counter move, race-free on both databases: the row is made or
# added to, and the new total comes back for the quota check. ADD_OUTPUT is on every
# ingest request's path, so it runs on the driver's cursor (`{m}` marks a parameter).
ADD_OUTPUT = (
    "INSERT INTO user_day_usage (user_key, day, output_bytes) VALUES ({m}, {m}, {m})"
    " ON CONFLICT (user_key, day) DO UPDATE"
    " SET output_bytes = user_day_usage.output_bytes + excluded.output_bytes"
    " RETURNING output_bytes"
)
ADD_SESSION = text(
    "INSERT INTO user_day_usage (user_key, day, sessions_opened) VALUES (:user_key, :day, 1)"
    " ON CONFLICT (user_key, day) DO UPDATE"
    " SET sessions_opened = user_day_usage.sessions_opened + 1"
    " RETURNING sessions_opened"
)


class UserDayRepository:
    """Moves the per-user, per-day counters on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_output(self, user_key, day, n):
        """Add `n` bytes to the user's output of `day`; the day's total now."""
        [(total,)] = on_driver(self.conn, ADD_OUTPUT, (user_key, day, n))
        return total

    def add_session(self, user_key, day):
        """Count one more session opened on `day`; the day's count now."""
        return self.conn.execute(ADD_SESSION, {"user_key": user_key, "day": day}).scalar_one()
