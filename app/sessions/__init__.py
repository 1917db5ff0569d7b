"""Sessions blueprint: open sessions and read their transcripts."""
from app.sessions.routes import bp

__all__ = ["bp"]
