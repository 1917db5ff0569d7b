"""SQL for `user_day_usage`: what each user's sessions took on each UTC day."""
from sqlalchemy import text

from app.storage.repositories.dialect import on_driver

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
