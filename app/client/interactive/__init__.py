"""`turnlog run --interactive`: the runner's side of the control channel (docs/control.md).

`run.Interactive` is what an interactive run adds to a plain one (the driver, the attach,
the first prompt, the command thread); `control` holds the command channel (`Channel`)
and what acts on each command exactly once (`Commander`).
"""
from app.client.interactive.control import STOP_GRACE_SECONDS
from app.client.interactive.run import Interactive

__all__ = ["STOP_GRACE_SECONDS", "Interactive"]
