"""Claude Code driven over stream-json (FORMATS: `claude -p --input-format stream-json`).

The CLI runs with `-p --input-format stream-json --output-format stream-json --verbose
--permission-prompt-tool stdio --replay-user-messages`: the runner adds those the user
left out (and says which) and refuses a command that sets one of them otherwise. Each
input is a `user` line under its uuid (the `--replay-user-messages` echo carries it back
to the server); a permission request is a `control_request` of subtype `can_use_tool`,
answered with a `control_response` (allow passes the request's own input as
`updatedInput`, deny passes the message); an interrupt is a `control_request` of subtype
`interrupt`, whose `control_response` is an ordinary line.
"""
import itertools
import json
import threading

from app.client.drivers.base import DriveFailed
from app.client.drivers.base import Driver
from app.client.errors import RunnerFailed

# (flag, value or None for a flag alone); `-p` may be spelt `--print`.
REQUIRED = (("-p", None), ("--input-format", "stream-json"), ("--output-format", "stream-json"),
            ("--verbose", None), ("--permission-prompt-tool", "stdio"),
            ("--replay-user-messages", None))
ALIASES = {"--print": "-p"}


class ClaudeDriver(Driver):
    name = "claude"
    controls = ("send", "permissions", "interrupt", "stop")

    def __init__(self):
        super().__init__()
        self._pending = {}  # request_id -> the tool input of a can_use_tool request
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def command(self, argv, resume_id=None):
        argv, added = list(argv), []
        given = _flags(argv[1:])
        for flag, value in REQUIRED:
            if flag not in given:
                argv += [flag] if value is None else [flag, value]
                added.append(flag if value is None else f"{flag} {value}")
            elif value is not None and given[flag] != value:
                raise RunnerFailed(f"the Claude command has {flag} {given[flag]!r}; driving it"
                                   f" needs {flag} {value}")
        if resume_id and "--resume" not in given and "-r" not in given:
            argv += ["--resume", resume_id]
            added.append(f"--resume {resume_id}")
        return argv, added

    def send(self, uuid, content):
        self.write(_line({"type": "user", "message": {"role": "user", "content": content},
                          "uuid": uuid}))

    def answer(self, request_id, behavior, message=None):
        with self._lock:
            if request_id not in self._pending:
                raise DriveFailed(f"the agent has no pending permission request {request_id!r}")
            tool_input = self._pending.pop(request_id)
        if behavior == "allow":
            decision = {"behavior": "allow", "updatedInput": tool_input}
        else:
            decision = {"behavior": "deny", "message": message or "denied", "interrupt": False}
        self.write(_line({"type": "control_response", "response": {
            "subtype": "success", "request_id": request_id, "response": decision}}))

    def interrupt(self, child):
        self.write(_line({"type": "control_request",
                          "request_id": f"turnlog-interrupt-{next(self._numbers)}",
                          "request": {"subtype": "interrupt"}}))

    def on_line(self, text):
        try:
            line = json.loads(text)
        except ValueError:
            return [text]
        if not isinstance(line, dict):
            return [text]
        if isinstance(line.get("session_id"), str) and line["session_id"]:
            self.agent_session_id = line["session_id"]
        kind = line.get("type")
        request = line.get("request")
        if kind == "control_request" and isinstance(request, dict) \
                and request.get("subtype") == "can_use_tool":
            with self._lock:
                self._pending[line.get("request_id")] = request.get("input") or {}
        elif kind == "control_cancel_request":
            with self._lock:
                self._pending.pop(line.get("request_id"), None)
        return [text]


def _flags(args):
    """{flag: its value (the next word, None for a flag alone)} of a Claude command line."""
    found = {}
    valued = {flag for flag, value in REQUIRED if value is not None} | {"--resume", "-r"}
    for at, word in enumerate(args):
        if not word.startswith("-"):
            continue
        name, equals, inline = word.partition("=")
        name = ALIASES.get(name, name)
        if equals:
            found[name] = inline
        elif name in valued:
            found[name] = args[at + 1] if at + 1 < len(args) else None
        else:
            found[name] = None
    return found


def _line(record):
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()
