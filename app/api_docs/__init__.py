"""API docs blueprint: the OpenAPI document of the JSON API, built from its schemas."""
from app.api_docs.routes import bp

__all__ = ["bp"]
