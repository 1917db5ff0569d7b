"""Ingest blueprint: what remote runners post (output, completion, usage)."""
from app.ingest.routes import bp

__all__ = ["bp"]
