"""SQL for `agent_tokens`: bearer tokens, stored by their hash."""
from sqlalchemy import text

from app.services.models import TokenRecord

COLUMNS = "id, kind, name, is_admin, created_at, revoked_at"
INSERT = text(
    "INSERT INTO agent_tokens (kind, name, is_admin, token_hash, created_at)"
    " VALUES (:kind, :name, :is_admin, :token_hash, :now) RETURNING id"
)
SELECT_ACTIVE_BY_HASH = text(
    f"SELECT {COLUMNS} FROM agent_tokens WHERE token_hash = :token_hash AND revoked_at IS NULL"
)
SELECT_ACTIVE_BY_ID = text(
    f"SELECT {COLUMNS} FROM agent_tokens WHERE id = :id AND revoked_at IS NULL"
)
SELECT_ALL = text(f"SELECT {COLUMNS} FROM agent_tokens ORDER BY id")
REVOKE = text(
    "UPDATE agent_tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL"
)


class TokenRepository:
    def __init__(self, conn):
        self.conn = conn

    def add(self, kind, name, is_admin, token_hash, now):
        """Store a new token's hash; returns its id."""
        params = {"kind": kind, "name": name, "is_admin": int(is_admin),
                  "token_hash": token_hash, "now": now}
        return self.conn.execute(INSERT, params).scalar_one()

    def active_by_hash(self, token_hash):
        """The unrevoked token with this hash, or None."""
        row = self.conn.execute(SELECT_ACTIVE_BY_HASH, {"token_hash": token_hash}).mappings().first()
        return _to_record(row) if row else None

    def active_by_id(self, token_id):
        """The unrevoked token with this id, or None."""
        row = self.conn.execute(SELECT_ACTIVE_BY_ID, {"id": token_id}).mappings().first()
        return _to_record(row) if row else None

    def list_all(self):
        return [_to_record(row) for row in self.conn.execute(SELECT_ALL).mappings()]

    def revoke(self, token_id, now):
        """Revoke the token; False when there is no such unrevoked token."""
        return self.conn.execute(REVOKE, {"id": token_id, "now": now}).rowcount == 1


def _to_record(row):
    data = dict(row)
    data["is_admin"] = bool(data["is_admin"])
    return TokenRecord(**data)
