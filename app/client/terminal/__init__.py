"""The terminal's side of the control channel (docs/control.md, docs/runner.md): `turnlog
send`, `approve`, `interrupt`, `stop` (commands.py) and `turnlog attach` (attach.py),
with what they share: which failed requests are tried again and how a refusal reads
(calls.py), and how a permission is shown and answered (prompts.py)."""
from app.client.terminal.attach import attach
from app.client.terminal.commands import COMMANDS as ONE_SHOT

COMMANDS = (*ONE_SHOT, attach)
