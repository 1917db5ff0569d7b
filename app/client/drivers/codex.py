"""Codex driven through `codex app-server` (JSON-RPC 2.0 over stdio; FORMATS B3).

The user writes `-- codex [options]`; the runner adds `app-server` (and says so).
`bind` starts the handshake (`initialize`); the reader thread goes on with it as the
answers come (`initialized`, then `thread/start`, or `thread/resume` with the thread id
the spool noted when the runner is resumed). A thread starts with approval policy
`untrusted` (Codex asks before any command it does not know to be read-only) and sandbox
`danger-full-access` (an allowed command runs as asked), unless the user's `-c` sets
`approval_policy` or `sandbox_mode`.

Inputs are `turn/start` (or `turn/steer` while a turn runs) under the input's uuid as
`clientUserMessageId`; the `userMessage` item that comes back with that id is where the
agent took the prompt, and the driver writes `turnlog.user` there. Approval requests
become `turnlog.permission_request` lines, answered accept / decline; a request Codex
resolves itself (an interrupted turn) becomes `turnlog.permission_withdrawn`. Interrupt
is `turn/interrupt`; the interrupted turn ends with `turnlog.interrupted` in place of
exec's `turn.completed`. Everything else app-server prints is said in the `codex exec
--json` vocabulary (codex_lines.py), or dropped: no JSON-RPC reaches the transcript.
"""
import itertools
import json
import select
import threading
import time

from app.client.drivers import codex_lines
from app.client.drivers.base import DriveFailed
from app.client.drivers.base import Driver
from app.client.drivers.codex_lines import line
from app.client.errors import RunnerFailed

SUBCOMMAND = "app-server"
# The CLI loads its config and auth before it answers `initialize` (~1 s here).
HANDSHAKE_SECONDS = 60.0
REPLY_SECONDS = 30.0
# A reply streams as `item.updated` lines holding its text so far: its first piece at
# once, then at most one line this often (exec prints no deltas; each line is whole).
STREAM_SECONDS = 0.5
# How often a wait for Codex looks whether it is still there to answer.
POLL_SECONDS = 0.1
APPROVAL_POLICY = "untrusted"
SANDBOX = "danger-full-access"
CLIENT_INFO = {"name": "turnlog", "title": "turnlog run --interactive", "version": "1"}
# JSON-RPC "method not found": what a server request the runner cannot answer gets, so
# that Codex never waits for ever on it.
NOT_HANDLED = -32601


class Call:
    """One request of the driver's, until Codex answers it."""

    def __init__(self, method, then=None):
        self.method = method
        self.then = then  # called in the reader thread with the answered call: lines to post
        self.done = threading.Event()
        self.result = None
        self.error = None


class CodexDriver(Driver):
    name = "codex"
    provider = "codex"
    controls = ("send", "permissions", "interrupt", "stop")

    def __init__(self):
        super().__init__()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._calls = {}  # our request id -> Call
        self._approvals = {}  # permission request id -> (Codex's JSON-RPC id, method)
        self._prompts = {}  # uuid -> content: sent, not yet seen taken
        self._partial = {}  # agent message id -> its text so far (deltas) in this turn
        self._shown = {}  # agent message id -> (when, how much of it) last posted
        self.clock = time.monotonic
        self._changes = {}  # file change item id -> its changes (for the approval's input)
        self._total = None  # the thread's token usage so far (tokenUsage.total)
        self.thread_id = None
        self.turn_id = None  # the running turn, None between turns
        self.ready = threading.Event()
        self.failure = None
        self.resume_id = None
        self.thread_params = {"approvalPolicy": APPROVAL_POLICY, "sandbox": SANDBOX}

    def command(self, argv, resume_id=None):
        argv = list(argv)
        self.resume_id = resume_id
        for key, param in (("approval_policy", "approvalPolicy"), ("sandbox_mode", "sandbox")):
            if _configured(argv, key):
                self.thread_params.pop(param)
        if SUBCOMMAND in argv[1:]:
            return argv, []
        if len(argv) > 1 and not argv[1].startswith("-"):
            raise RunnerFailed(f"the Codex command has {argv[1]!r}; the codex driver runs"
                               f" `codex {SUBCOMMAND}` itself: write `-- codex [options]`")
        return [argv[0], SUBCOMMAND, *argv[1:]], [SUBCOMMAND]

    def bind(self, stdin, emit=None):
        super().bind(stdin, emit)
        try:
            self._request("initialize", {"clientInfo": CLIENT_INFO}, then=self._initialized)
        except DriveFailed as err:  # it exited at once: its exit code and stderr say why
            self.failure = f"Codex could not be started: {err}"
            self.ready.set()

    # --- the controls (the command thread) ---

    def send(self, uuid, content):
        if not self._wait(self.ready, HANDSHAKE_SECONDS):
            raise DriveFailed(f"Codex did not open a thread within {HANDSHAKE_SECONDS:g} s")
        if self.failure:
            raise DriveFailed(self.failure)
        text = [{"type": "text", "text": content, "text_elements": []}]
        with self._lock:
            self._prompts[uuid] = content
            turn = self.turn_id
        base = {"threadId": self.thread_id, "input": text, "clientUserMessageId": uuid}
        if turn is not None:
            call = self._call("turn/steer", {**base, "expectedTurnId": turn})
            if call.error is None:
                return
            # the turn ended meanwhile: the prompt starts the next one
        call = self._call("turn/start", base, then=self._turn_begun)
        if call.error is not None:
            with self._lock:
                self._prompts.pop(uuid, None)
            raise DriveFailed(f"Codex refused the prompt: {_message(call.error)}")

    def answer(self, request_id, behavior, message=None):
        with self._lock:
            pending = self._approvals.pop(request_id, None)
        if pending is None:
            raise DriveFailed(f"the agent has no pending permission request {request_id!r}")
        rpc_id, _method = pending
        decision = "accept" if behavior == "allow" else "decline"
        self.write(_bytes({"jsonrpc": "2.0", "id": rpc_id, "result": {"decision": decision}}))

    def interrupt(self, child):
        with self._lock:
            turn = self.turn_id
        if turn is None:
            raise DriveFailed("no turn is running")
        self._request("turn/interrupt", {"threadId": self.thread_id, "turnId": turn})

    # --- what Codex prints (the reader thread) ---

    def on_line(self, text):
        try:
            message = json.loads(text)
        except ValueError:
            return [text]  # not JSON-RPC: kept as printed
        if not isinstance(message, dict):
            return [text]
        try:
            if "method" in message and "id" in message:
                return self._server_request(message)
            if "method" in message:
                handle = NOTIFICATIONS.get(message["method"])
                params = message.get("params")
                return handle(self, params if isinstance(params, dict) else {}) if handle else []
            if "id" in message:
                return self._answered(message)
        except DriveFailed as err:  # its stdin closed: the agent is ending
            return [line({"type": "error", "message": str(err)})]
        return []

    def _answered(self, message):
        with self._lock:
            call = self._calls.pop(message.get("id"), None)
        if call is None:
            return []
        call.result, call.error = message.get("result"), message.get("error")
        try:
            return call.then(call) if call.then else []
        finally:
            call.done.set()

    def _initialized(self, call):
        if call.error is not None:
            return self._fail(f"Codex refused to initialize: {_message(call.error)}")
        self.write(_bytes({"jsonrpc": "2.0", "method": "initialized"}))
        if self.resume_id:
            self._request("thread/resume", {"threadId": self.resume_id, **self.thread_params},
                          then=self._thread_opened)
        else:
            self._request("thread/start", dict(self.thread_params), then=self._thread_opened)
        return []

    def _thread_opened(self, call):
        if call.error is not None and call.method == "thread/resume":
            self._request("thread/start", dict(self.thread_params), then=self._thread_opened)
            return [line({"type": "error", "message": f"Codex could not resume thread"
                          f" {self.resume_id} ({_message(call.error)}): a new thread is started"})]
        thread = (call.result or {}).get("thread") if call.error is None else None
        if not isinstance(thread, dict) or not thread.get("id"):
            return self._fail(f"Codex opened no thread: {_message(call.error)}")
        self.thread_id = self.agent_session_id = thread["id"]
        self.ready.set()
        return [line({"type": "thread.started", "thread_id": thread["id"]})]

    def _turn_begun(self, call):
        turn = (call.result or {}).get("turn") if call.error is None else None
        if isinstance(turn, dict) and turn.get("status") == "inProgress":
            with self._lock:
                self.turn_id = turn.get("id")
        return []

    def _fail(self, reason):
        self.failure = reason
        self.ready.set()
        return [line({"type": "error", "message": reason})]

    def _server_request(self, message):
        method, params = message["method"], message.get("params") or {}
        if method in APPROVALS:
            return [self._ask(message["id"], method, params)]
        self.write(_bytes({"jsonrpc": "2.0", "id": message["id"], "error": {
            "code": NOT_HANDLED, "message": f"turnlog's runner does not answer {method}"}}))
        return [line({"type": "error", "message": f"Codex asked {method}, which turnlog's"
                      " runner cannot answer: refused"})]

    def _ask(self, rpc_id, method, params):
        request_id = str(params.get("itemId") or f"codex-request-{rpc_id}")
        if params.get("approvalId"):
            request_id += f":{params['approvalId']}"
        tool_name, tool_input = APPROVALS[method](self, params)
        with self._lock:
            self._approvals[request_id] = (rpc_id, method)
        return line({"type": "turnlog.permission_request", "request_id": request_id,
                     "tool_name": tool_name, "input": tool_input})

    def _command_input(self, params):
        found = {key: params.get(key) for key in ("command", "cwd", "reason")}
        return "command_execution", {key: value for key, value in found.items() if value}

    def _file_input(self, params):
        found = {"changes": self._changes.get(params.get("itemId"), []),
                 "reason": params.get("reason"), "grant_root": params.get("grantRoot")}
        return "file_change", {key: value for key, value in found.items() if value}

    # --- notifications ---

    def _turn_started(self, params):
        turn = params.get("turn") or {}
        with self._lock:
            self.turn_id = turn.get("id")
            self._partial.clear()
            self._shown.clear()
        return [line({"type": "turn.started"})]

    def _item_started(self, params):
        item = params.get("item") or {}
        if item.get("type") == "fileChange":  # what an approval of it will show
            self._changes[item.get("id")] = codex_lines.file_changes(item)
        return self._taken(item) or _some(codex_lines.item_line("item.started", item))

    def _item_completed(self, params):
        item = params.get("item") or {}
        self._partial.pop(item.get("id"), None)
        self._shown.pop(item.get("id"), None)
        self._changes.pop(item.get("id"), None)
        return self._taken(item) or _some(codex_lines.item_line("item.completed", item))

    def _taken(self, item):
        """`turnlog.user` for the user message that carries a prompt of ours (once)."""
        if item.get("type") != "userMessage":
            return []
        with self._lock:
            content = self._prompts.pop(item.get("clientId"), None)
        if content is None:
            return []
        return [line({"type": "turnlog.user", "uuid": item["clientId"], "content": content})]

    def _delta(self, params):
        item_id = params.get("itemId")
        text = self._partial[item_id] = self._partial.get(item_id, "") + str(
            params.get("delta") or "")
        now = self.clock()
        shown = self._shown.get(item_id)
        if shown is not None and now - shown[0] < STREAM_SECONDS:
            return []
        self._shown[item_id] = (now, len(text))
        return [_said_so_far(item_id, text)]

    def _usage(self, params):
        usage = params.get("tokenUsage")
        if isinstance(usage, dict):
            self._total = usage.get("total")
        return []

    def _turn_completed(self, params):
        turn = params.get("turn") or {}
        with self._lock:
            self.turn_id = None
            partial, self._partial = self._partial, {}
            shown, self._shown = self._shown, {}
        status = turn.get("status")
        if status == "interrupted":  # all it had said is kept, then the turn is marked
            kept = [_said_so_far(item_id, text) for item_id, text in partial.items()
                    if len(text) > shown.get(item_id, (0, 0))[1]]
            return [*kept, line({"type": "turnlog.interrupted"})]
        if status == "failed":
            return [line({"type": "turn.failed",
                          "error": {"message": _message(turn.get("error"))}})]
        if self._total is None:  # no model call counted yet: no total to say (not a zero)
            return [line({"type": "turn.completed"})]
        return [line({"type": "turn.completed", "usage": codex_lines.usage(self._total)})]

    def _error(self, params):
        return [line({"type": "error", "message": _message(params.get("error"))})]

    def _resolved(self, params):
        """Codex resolved a request nobody answered (its turn was interrupted)."""
        rpc_id = params.get("requestId")
        with self._lock:
            gone = [rid for rid, (each, _) in self._approvals.items() if each == rpc_id]
            for request_id in gone:
                del self._approvals[request_id]
        return [line({"type": "turnlog.permission_withdrawn", "request_id": rid}) for rid in gone]

    # --- JSON-RPC ---

    def _request(self, method, params, then=None):
        call = Call(method, then)
        with self._lock:
            number = next(self._ids)
            self._calls[number] = call
        self.write(_bytes({"jsonrpc": "2.0", "id": number, "method": method, "params": params}))
        return call

    def _call(self, method, params, then=None):
        """Send a request and wait for its answer."""
        call = self._request(method, params, then)
        if not self._wait(call.done, REPLY_SECONDS):
            raise DriveFailed(f"Codex did not answer {method} within {REPLY_SECONDS:g} s")
        return call

    def _wait(self, event, seconds):
        """Wait for `event`; DriveFailed as soon as Codex has exited (its stdin's reading
        end closed: the pipe says so) or is being stopped, not at the end of the wait."""
        deadline = time.monotonic() + seconds
        while not event.wait(min(POLL_SECONDS, max(deadline - time.monotonic(), 0))):
            if time.monotonic() >= deadline:
                return False
            if self.stdin is None or self.stdin.closed:  # a stop: no answer is coming
                raise DriveFailed("the agent's stdin is closed (it is stopping)")
            if _reader_gone(self.stdin):
                raise DriveFailed("Codex has exited")
        return True


NOTIFICATIONS = {
    "turn/started": CodexDriver._turn_started,
    "item/started": CodexDriver._item_started,
    "item/completed": CodexDriver._item_completed,
    "item/agentMessage/delta": CodexDriver._delta,
    "thread/tokenUsage/updated": CodexDriver._usage,
    "turn/completed": CodexDriver._turn_completed,
    "error": CodexDriver._error,
    "serverRequest/resolved": CodexDriver._resolved,
}
APPROVALS = {
    "item/commandExecution/requestApproval": CodexDriver._command_input,
    "item/fileChange/requestApproval": CodexDriver._file_input,
}


def _configured(argv, key):
    """Whether the command sets `key` with `-c key=...` (or `--config`)."""
    for at, word in enumerate(argv[1:], 1):
        value = argv[at + 1] if word in ("-c", "--config") and at + 1 < len(argv) else (
            word.partition("=")[2] if word.startswith("--config=") else None)
        if value is not None and value.split("=", 1)[0].strip() == key:
            return True
    return False


def _reader_gone(pipe):
    """Whether nothing reads `pipe` any more (POLLERR on a pipe's writing end)."""
    try:
        poller = select.poll()
        poller.register(pipe.fileno(), select.POLLOUT)
        return any(flags & (select.POLLERR | select.POLLHUP) for _, flags in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # not a pipe (a test's), or closed
        return False


def _message(error):
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return "no reason given"


def _said_so_far(item_id, text):
    return line({"type": "item.updated", "item": {"id": item_id, "type": "agent_message",
                                                  "text": text}})


def _some(text):
    return [text] if text else []


def _bytes(record):
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()
