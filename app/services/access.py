"""Who is calling, and what that caller may do with a session. Pure.

A runner token names a machine: it writes only the sessions assigned to that
machine, and only those of the users it is scoped to (`users`; None: any user). A
session's own write token (`session_id`) writes that one session and nothing else.
A user token names a user: it reads only the sessions that user owns
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
    users: tuple | None = None  # a runner's users; None: any user
    session_id: str | None = None  # set on a session's own write token
    viewer_key_hash: str | None = None  # set when a viewer's sign-in cookie came
    expires_at: str | None = None  # when the token stops working; None: never

    @property
    def is_session_token(self):
        return self.session_id is not None

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

    def may_serve(self, user_id):
        """True when this runner may open or write sessions owned by `user_id`."""
        return self.users is None or user_id in self.users

    def may_write(self, session):
        if self.is_open:
            return True
        if self.kind != RUNNER:
            return False
        if self.is_session_token:
            return session.session_id == self.session_id
        return session.machine == self.name and self.may_serve(session.user_id)


OPEN = Caller("open", None, is_admin=True)
