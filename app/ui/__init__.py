"""UI blueprint: server-rendered pages to browse sessions and follow a transcript live."""
from app.ui.routes import bp

__all__ = ["bp"]
