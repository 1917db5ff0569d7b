"""What `turnlog run --interactive` needs to know about the agent command it drives.

A driver says which controls the runner offers the server for this agent (`send`,
`permissions`, `interrupt`, `stop`: docs/control.md), the command line the agent must
run with, and how each control is done on the agent's stdin; and it reads each line the
agent prints on stdout. The interface (`Driver`, in app/client/drivers/base.py):

- `controls`: the tuple of controls offered (the runner attaches with it).
- `command(argv, resume_id=None)`: (the argv to run, the flags it added), the agent's
  own session id `resume_id` continued when the runner is resumed.
- `bind(stdin, emit)`: the runner hands over the child's stdin (a binary pipe) before
  any other call below, and `emit(text)`, which posts one more stdout line of the
  session's at once (numbered, spooled and batched as the agent's own): for the neutral
  `turnlog.*` lines of docs/control.md that answer no line of the agent's (a translating
  driver's `turnlog.user` when it sends a prompt). A driver whose agent needs a handshake
  on stdin first (JSON-RPC `initialize`) writes it here.
- `send(uuid, content)`, `answer(request_id, behavior, message)`, `interrupt(child)`:
  write one input under its uuid, answer a permission request, interrupt the turn.
  Each raises `NotSupported` for a control it does not offer, `DriveFailed` when the
  agent cannot take it (the runner acknowledges the command `failed` with the reason).
- `on_line(text)`: called with each stdout line in the reader thread; returns the
  lines to post instead (usually `[text]`; a translating driver may return others, or
  none). It may note the agent's own session id in `agent_session_id`, and answer the
  agent on its stdin (`write`) from there.

`write(data)` (one line, bytes) and `close_stdin()` are the base class's, safe from any
thread.

`driver_for(name, argv)` picks one: `claude` for Claude Code, `codex` for Codex (through
`codex app-server`, app/client/drivers/codex.py), `gemini` for Gemini CLI (`gemini --acp`,
app/client/drivers/gemini.py), `generic` for any other command (interrupt is SIGINT to
the child, stop; no send, no permissions), `auto` by the program's name.
"""
import os

from app.client.drivers.base import QUEUED
from app.client.drivers.base import DriveFailed
from app.client.drivers.base import Driver
from app.client.drivers.base import GenericDriver
from app.client.drivers.base import NotSupported
from app.client.drivers.claude import ClaudeDriver
from app.client.drivers.codex import CodexDriver
from app.client.drivers.gemini import GeminiDriver

DRIVERS = {"claude": ClaudeDriver, "codex": CodexDriver, "gemini": GeminiDriver,
           "generic": GenericDriver}
CHOICES = ("auto", *DRIVERS)

__all__ = ["CHOICES", "QUEUED", "DriveFailed", "Driver", "NotSupported", "driver_for"]


def driver_for(name, argv):
    """The driver `name` (one of CHOICES) for the command `argv`."""
    if name == "auto":
        program = os.path.basename(argv[0]) if argv else ""
        name = program if program in ("claude", "codex", "gemini") else "generic"
    return DRIVERS[name]()
