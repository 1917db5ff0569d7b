"""SQL for `stream_leases`: the open live streams of each token, with an expiry."""
from sqlalchemy import text

# A no-op write on the token's row: concurrent opens by one token queue here
# (PostgreSQL row lock; SQLite writers already hold the database lock), so
# counting and adding a lease cannot race past the limit.
LOCK_TOKEN = text("UPDATE agent_tokens SET id = id WHERE id = :token_id")
DELETE_EXPIRED = text("DELETE FROM stream_leases WHERE token_id = :token_id AND expires_at < :now")
COUNT = text("SELECT COUNT(*) FROM stream_leases WHERE token_id = :token_id")
# The same per user (migration 0022), whichever of the user's tokens holds the stream.
# Opens by one user's several tokens queue on the user's row of the day in
# user_day_usage, written to no effect (made if need be): the token rows they lock
# are not the same.
LOCK_USER = text(
    "INSERT INTO user_day_usage (user_key, day) VALUES (:user_key, :day)"
    " ON CONFLICT (user_key, day) DO UPDATE SET sessions_opened = user_day_usage.sessions_opened"
)
DELETE_EXPIRED_OF_USER = text(
    "DELETE FROM stream_leases WHERE user_key = :user_key AND expires_at < :now"
)
COUNT_OF_USER = text("SELECT COUNT(*) FROM stream_leases WHERE user_key = :user_key")
INSERT = text(
    "INSERT INTO stream_leases (lease_id, token_id, session_id, expires_at, user_key)"
    " VALUES (:lease_id, :token_id, :session_id, :expires_at, :user_key)"
)
# A lease that expired meanwhile (the process stalled longer than its lifetime)
# and was cleared by another open comes back rather than leaving the stream uncounted.
RENEW = text(
    "INSERT INTO stream_leases (lease_id, token_id, session_id, expires_at, user_key)"
    " VALUES (:lease_id, :token_id, :session_id, :expires_at, :user_key)"
    " ON CONFLICT (lease_id) DO UPDATE SET expires_at = excluded.expires_at"
)
DELETE = text("DELETE FROM stream_leases WHERE lease_id = :lease_id")


class StreamLeaseRepository:
    def __init__(self, conn):
        self.conn = conn

    def lock_token(self, token_id):
        """Hold the token's row until this transaction ends."""
        self.conn.execute(LOCK_TOKEN, {"token_id": token_id})

    def count_live(self, token_id, now):
        """Delete the token's expired leases, then count those left."""
        self.conn.execute(DELETE_EXPIRED, {"token_id": token_id, "now": now})
        return self.conn.execute(COUNT, {"token_id": token_id}).scalar_one()

    def lock_user(self, user_key, day):
        """Hold the user's row of `day` in user_day_usage until this transaction ends."""
        self.conn.execute(LOCK_USER, {"user_key": user_key, "day": day})

    def count_live_of_user(self, user_key, now):
        """Delete the user's expired leases, then count those left."""
        self.conn.execute(DELETE_EXPIRED_OF_USER, {"user_key": user_key, "now": now})
        return self.conn.execute(COUNT_OF_USER, {"user_key": user_key}).scalar_one()

    def add(self, lease_id, token_id, session_id, expires_at, user_key=None):
        self.conn.execute(INSERT, {"lease_id": lease_id, "token_id": token_id,
                                   "session_id": session_id, "expires_at": expires_at,
                                   "user_key": user_key})

    def renew(self, lease_id, token_id, session_id, expires_at, user_key=None):
        self.conn.execute(RENEW, {"lease_id": lease_id, "token_id": token_id,
                                  "session_id": session_id, "expires_at": expires_at,
                                  "user_key": user_key})

    def delete(self, lease_id):
        self.conn.execute(DELETE, {"lease_id": lease_id})
