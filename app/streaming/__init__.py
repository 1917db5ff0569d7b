"""Streaming blueprint: a session's live output as Server-Sent Events."""
from app.streaming.routes import bp

__all__ = ["bp"]
