"""Control blueprint: the command channel of a live session (runner side) and the
permission answers, interrupts and stops people send (client side)."""
from app.control.routes import bp

__all__ = ["bp"]
