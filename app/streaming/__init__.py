"""Streaming blueprint: a session's live output and live events as Server-Sent Events."""
from app.streaming import events  # noqa: F401  (registers GET .../events on bp)
from app.streaming.routes import bp

__all__ = ["bp"]
