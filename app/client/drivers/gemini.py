"""Gemini CLI driven over the Agent Client Protocol (`gemini --acp`; FORMATS B4).

JSON-RPC 2.0 over stdio. `bind` sends `initialize` (announcing no client capabilities:
the driver reads no files and runs no terminals for the agent), then `session/new`, or
`session/load` of the agent's session on a resumed run. Each input is a `session/prompt`,
one at a time: an input that comes while a turn runs waits in the driver's queue (the CLI
would abort the running turn for it). A `session/request_permission` becomes a
`turnlog.permission_request` line; `answer` selects the request's allow-once option, or
its reject option on a deny. `interrupt` is `session/cancel` (pending requests answered
`cancelled` first, as the protocol asks). What the agent sends is translated into
`gemini --output-format stream-json` lines (app/client/drivers/acp.py), written with
`emit` under the driver's lock so that they keep the order things happened in, and the
protocol's own lines are not posted.
"""
import glob
import itertools
import json
import os
import threading
import time
from datetime import datetime
from datetime import timezone

from app.client.drivers.acp import Translator
from app.client.drivers.acp import dumps
from app.client.drivers.acp import tool_input
from app.client.drivers.acp import tool_name
from app.client.drivers.base import QUEUED
from app.client.drivers.base import DriveFailed
from app.client.drivers.base import Driver
from app.client.errors import RunnerFailed

ACP_FLAGS = ("--acp", "--experimental-acp")
# Flags of a headless or interactive-terminal run, which the protocol replaces.
REFUSED = ("-p", "--prompt", "-i", "--prompt-interactive", "-o", "--output-format",
           "-r", "--resume")
PROTOCOL_VERSION = 1
METHOD_NOT_FOUND = -32601


class GeminiDriver(Driver):
    name = "gemini"
    provider = "gemini"
    controls = ("send", "permissions", "interrupt", "stop")

    def __init__(self, clock=time.time, timer=threading.Timer, cwd=None, find_start=None):
        super().__init__()
        self.clock = clock
        self.timer = timer  # a resumed session is loaded after a wait (see _load_later)
        self.find_start = find_start or session_started
        self.cwd = cwd
        self.lines = Translator(clock)
        self.resume_id = None
        self.failed = None  # why the agent cannot be driven, once it cannot
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._calls = {}  # our request id -> "initialize", "session/new", "session/load", "prompt"
        self._queue = []  # (uuid, content) not sent yet
        self._turn = None  # the running prompt: {"id", "started", "interrupted"}
        self._asks = {}  # request_id -> {"rpc_id", "options", "tool_call"}
        self._loading = False  # a resumed session waits to be loaded

    def command(self, argv, resume_id=None):
        argv = list(argv)
        words = {word.partition("=")[0] for word in argv[1:]}
        for flag in REFUSED:
            if flag in words:
                raise RunnerFailed(f"the Gemini command has {flag}; the gemini driver runs it"
                                   " as `gemini --acp` and sends the prompts itself (--prompt)")
        self.resume_id = resume_id
        if words & set(ACP_FLAGS):
            return argv, []
        return argv + ["--acp"], ["--acp"]

    def bind(self, stdin, emit=None):
        super().bind(stdin, emit)
        self._request("initialize", "initialize", {
            "protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}})

    def send(self, uuid, content):
        with self._lock:
            if self.failed:
                raise DriveFailed(self.failed)
            self._queue.append((uuid, content))
            if self._next_prompt(now=uuid) != uuid:
                return QUEUED  # written later: on_sent says when
            return None

    def answer(self, request_id, behavior, message=None):
        with self._lock:
            ask = self._asks.pop(request_id, None)
            if ask is None:
                raise DriveFailed(f"the agent has no pending permission request {request_id!r}")
            kinds = ("allow_once", "allow_always") if behavior == "allow" else \
                ("reject_once", "reject_always")
            option = _option(ask["options"], kinds)
            if behavior != "allow" or option is None:
                # the CLI says nothing of a rejected call: its end is the driver's to write
                self._emit(self.lines.tool_result(
                    ask["tool_call"], error=f"denied: {message}" if message else "denied"))
            outcome = {"outcome": "selected", "optionId": option} if option else \
                {"outcome": "cancelled"}
            self._respond(ask["rpc_id"], {"outcome": outcome})

    def interrupt(self, child):
        with self._lock:
            if self._turn is None:
                raise DriveFailed("no turn is running")
            self._cancel()

    def close_stdin(self):
        """A stop: the running turn is cancelled first (at the end of its input the CLI
        would finish the turn before it exits), then the input ends."""
        with self._lock:
            dropped, self._queue = self._queue, []
            for uuid, _content in dropped:
                if self.on_dropped:
                    self.on_dropped(uuid, "the agent was stopped before it was sent")
            if self._turn is not None and not self._turn["interrupted"]:
                try:
                    self._cancel()
                except DriveFailed:
                    pass  # its stdin is closed already
        super().close_stdin()

    def on_line(self, text):
        try:
            message = json.loads(text)
        except ValueError:
            return [text]
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [text]
        with self._lock:
            if "method" in message and "id" in message:
                self._agent_request(message)
            elif "method" in message:
                self._notification(message)
            else:
                self._response(message)
        return []

    # what the agent sends

    def _agent_request(self, message):
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if message["method"] != "session/request_permission":
            self.write(_wire({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": METHOD_NOT_FOUND, "message": f"this client offers no {message['method']}"}}))
            return
        tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        request_id = tool_call.get("toolCallId")
        if not isinstance(request_id, str) or not request_id:
            request_id = f"acp-{self.agent_session_id}-{message['id']}"
            tool_call = {**tool_call, "toolCallId": request_id}
        self._asks[request_id] = {"rpc_id": message["id"], "tool_call": tool_call,
                                  "options": params.get("options") or []}
        self._emit(self.lines.tool_use(tool_call))
        self._emit([dumps({"type": "turnlog.permission_request", "request_id": request_id,
                           "tool_name": tool_name(tool_call),
                           "input": tool_input(tool_call)})])

    def _notification(self, message):
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        update = params.get("update")
        # outside a turn the agent only replays a loaded session's history or lists its
        # commands: neither is new to the transcript
        if message["method"] == "session/update" and self._turn and isinstance(update, dict):
            self._emit(self.lines.update(update))

    def _response(self, message):
        what = self._calls.pop(message.get("id"), None)
        if what == "initialize":
            self._handshake_answered(message, "initialize")
        elif what in ("session/new", "session/load"):
            self._session_answered(message, what)
        elif what == "prompt":
            self._prompt_answered(message)

    def _handshake_answered(self, message, what):
        if "error" in message:
            return self._fail(f"gemini --acp refused {what}: {_error_text(message)}")
        if self.resume_id:
            return self._load_later()
        self._new_session()

    def _session_answered(self, message, what):
        self._loading = False
        if "error" in message and what == "session/load":
            self._emit([self.lines.line("error", severity="warning", message=(
                f"gemini --acp could not load session {self.resume_id}:"
                f" {_error_text(message)}; a new session goes on without its history"))])
            self.resume_id = None
            return self._new_session()
        if "error" in message:
            return self._fail(f"gemini --acp refused session/new: {_error_text(message)}")
        result = message.get("result") if isinstance(message.get("result"), dict) else {}
        if what == "session/new":
            self.agent_session_id = result.get("sessionId")
        model = (result.get("models") or {}).get("currentModelId")
        self._emit([self.lines.init(self.agent_session_id, model)])
        self._next_prompt()

    def _prompt_answered(self, message):
        turn, self._turn = self._turn, None
        for request_id, ask in list(self._asks.items()):  # the turn ended under them
            self._withdraw(request_id, ask)
        stop = (message.get("result") or {}).get("stopReason") \
            if isinstance(message.get("result"), dict) else None
        if stop == "cancelled":
            self._emit([dumps({"type": "turnlog.interrupted"})])
        else:
            took = int((self.clock() - turn["started"]) * 1000) if turn else 0
            self._emit([self.lines.result(message, took)])
        self._next_prompt()

    # what the driver sends

    def _next_prompt(self, now=None):
        """Send the next queued input when the session is ready and no turn runs; its uuid.
        The runner is told of one it held back (`on_sent`); `now` is the one being sent,
        whose `send` call says so itself."""
        if self._turn is not None or not self._queue or not self._ready():
            return None
        uuid, content = self._queue.pop(0)
        rpc_id = self._request("prompt", "session/prompt", {
            "sessionId": self.agent_session_id, "prompt": [{"type": "text", "text": content}]})
        if uuid != now and self.on_sent:
            self.on_sent(uuid)
        # posted once written (a prompt that never reached the agent is no row), and still
        # before anything the agent answers: its lines are read under the same lock
        self.lines.new_turn()
        self._emit([dumps({"type": "turnlog.user", "uuid": uuid, "content": content})])
        self._turn = {"id": rpc_id, "started": self.clock(), "interrupted": False}
        return uuid

    def _ready(self):
        return self.agent_session_id is not None and not self._loading and not self.failed \
            and not any(what != "prompt" for what in self._calls.values())

    def _new_session(self):
        self._request("session/new", "session/new", {"cwd": self._cwd(), "mcpServers": []})

    def _load_later(self):
        """Load the session once the wall clock is past the minute it started in: Gemini
        CLI 0.61 names a session's file by that minute, and a load within it overwrites
        the history (FORMATS B4). The minute is read from the files' names when they are
        found; else all that is known is that it started before now."""
        self.agent_session_id = self.resume_id
        self._loading = True
        now = self.clock()
        started = self.find_start(self.resume_id)
        minute = started if started is not None else now - now % 60.0
        wait = minute + 60.0 + 0.5 - now
        if wait <= 0:
            return self._load()
        loader = self.timer(wait, self._load)
        loader.daemon = True
        loader.start()

    def _load(self):
        with self._lock:
            try:
                self._request("session/load", "session/load", {
                    "sessionId": self.resume_id, "cwd": self._cwd(), "mcpServers": []})
            except DriveFailed:
                pass  # the agent went away meanwhile: its exit ends the run

    def _cancel(self):
        self._turn["interrupted"] = True
        for request_id, ask in list(self._asks.items()):
            self._withdraw(request_id, ask)
        self.write(_wire({"jsonrpc": "2.0", "method": "session/cancel",
                          "params": {"sessionId": self.agent_session_id}}))

    def _withdraw(self, request_id, ask):
        self._asks.pop(request_id, None)
        self._emit(self.lines.tool_result(ask["tool_call"], error="cancelled: the turn was interrupted"))
        self._emit([dumps({"type": "turnlog.permission_withdrawn", "request_id": request_id})])
        self._respond(ask["rpc_id"], {"outcome": {"outcome": "cancelled"}})

    def _request(self, what, method, params):
        rpc_id = next(self._ids)
        self._calls[rpc_id] = what
        self.write(_wire({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}))
        return rpc_id

    def _respond(self, rpc_id, result):
        self.write(_wire({"jsonrpc": "2.0", "id": rpc_id, "result": result}))

    def _emit(self, lines):
        for line in lines:
            self.emit(line)

    def _fail(self, reason):
        self.failed = reason
        self._emit([self.lines.line("error", severity="error", message=reason)])
        self.close_stdin()  # the agent cannot be driven: let it end, and the run with it

    def _cwd(self):
        return self.cwd or os.getcwd()


def session_started(session_id, environ=os.environ):
    """The latest minute (its start, seconds since the epoch) a file of Gemini CLI's
    session `session_id` is named by: `<GEMINI_CLI_HOME or HOME>/.gemini/tmp/<project>/
    chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json[l]` (a load makes one more, named by its own
    minute); None when there is none."""
    home = environ.get("GEMINI_CLI_HOME") or environ.get("HOME")
    if not home or not session_id:
        return None
    pattern = os.path.join(glob.escape(home), ".gemini", "tmp", "*", "chats",
                           f"session-*-{glob.escape(session_id[:8])}.json*")
    minutes = []
    for path in glob.glob(pattern):
        stamp = os.path.basename(path)[len("session-"):][:16]
        try:
            minutes.append(datetime.strptime(stamp, "%Y-%m-%dT%H-%M").replace(
                tzinfo=timezone.utc).timestamp())
        except ValueError:
            continue
    return max(minutes, default=None)


def _option(options, kinds):
    """The id of the first option of the first kind in `kinds` that the request offers."""
    for kind in kinds:
        for option in options:
            if isinstance(option, dict) and option.get("kind") == kind:
                return option.get("optionId")
    return None


def _error_text(message):
    error = message.get("error")
    return str(error.get("message") or error) if isinstance(error, dict) else str(error)


def _wire(record):
    return (dumps(record) + "\n").encode()
