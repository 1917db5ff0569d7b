"""Repositories: the only modules (besides migrations) that hold SQL.

Each takes a SQLAlchemy `Connection` already inside a transaction and speaks
plain SQL with bound parameters; JSON columns are TEXT, times are ISO-8601 TEXT.
"""
from app.services.repositories.messages import MessageRepository
from app.services.repositories.outputs import OutputRepository
from app.services.repositories.search import SearchRepository
from app.services.repositories.sessions import SessionRepository
from app.services.repositories.stream_cursors import StreamCursorRepository
from app.services.repositories.tokens import TokenRepository
from app.services.repositories.turn_states import TurnStateRepository
from app.services.repositories.turns import TurnRepository
from app.services.repositories.usage import UsageRepository

__all__ = [
    "MessageRepository",
    "OutputRepository",
    "SearchRepository",
    "SessionRepository",
    "StreamCursorRepository",
    "TokenRepository",
    "TurnRepository",
    "TurnStateRepository",
    "UsageRepository",
]
