"""Inputs blueprint: a person's prompts to a live session."""
from app.inputs.routes import bp

__all__ = ["bp"]
