"""Who is calling, and what that caller may do with a session. Pure.

A runner token names a machine: it writes only the sessions assigned to that
machine. A user token names a user: it reads only the sessions that user owns
(`agent_sessions.user_id`), or every session for an admin. With authentication
switched off (local demos) every request is the OPEN caller, which may do anything.
"""
from dataclasses import dataclass

RUNNER = "runner"
USER = "user"
TOKEN_KINDS = (RUNNER, USER)


@dataclass(frozen=True)
class Caller:
    kind: str  # RUNNER, USER, or "open" when authentication is off
    name: str | None  # the machine or user the token names
    is_admin: bool = False
    token_id: int | None = None

    @property
    def is_open(self):
        return self.kind == "open"

    @property
    def sees_everything(self):
        return self.is_open or (self.kind == USER and self.is_admin)

    @property
    def owner_scope(self):
        """The owner whose sessions this caller may list; None means every session."""
        return None if self.sees_everything else self.name

    def may_read(self, session):
        if self.sees_everything:
            return True
        return self.kind == USER and session.user_id == self.name

    def may_write(self, session):
        return self.is_open or (self.kind == RUNNER and session.machine == self.name)


OPEN = Caller("open", None, is_admin=True)
