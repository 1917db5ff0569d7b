"""A fake turnlog server speaking the runner's routes of docs/control.md, for the e2e tests
of `turnlog run --interactive`: sessions, output, complete, runner attach, the command
channel (SSE with Last-Event-ID) and acknowledgements. Threaded; the test pushes commands
with `push(kind, **body)` and reads what the runner posted."""
import json
import re
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

from tests.http_handlers import QuietHandler

COMMANDS = re.compile(r"^/api/remote/sessions/([^/]+)/commands(\?.*)?$")
ACK = re.compile(r"^/api/remote/sessions/([^/]+)/commands/(\d+)/ack$")


class State:
    def __init__(self):
        self.session_id = str(uuid.uuid4())
        self.cond = threading.Condition()
        self.commands = []  # dicts, command_id ascending
        self.pushed_at = {}  # command_id -> time.time() it was written to a stream
        self.acks = {}  # command_id -> ack body
        self.acked_at = {}  # command_id -> time.time() the ack was stored
        self.ack_requests = []  # command ids, in the order ack requests came
        self.hold_acks = set()  # ack requests of these ids hang, unanswered and not stored
        self.chunks = {}  # seq -> chunk
        self.attached = []
        self.opened = None  # the body that opened the session
        self.completed = None
        self.stream_opens = []  # Last-Event-ID of each command stream opened
        self.next_id = 100

    def push(self, kind, **body):
        with self.cond:
            self.next_id += 1
            command = {"command_id": self.next_id, "kind": kind, "created_at": "now", **body}
            self.commands.append(command)
            self.cond.notify_all()
            return self.next_id

    def push_input_holding_its_ack(self, input_id, uuid, content, timeout=30):
        """Queue an input whose ack request will hang, unanswered and not stored, and wait
        until it comes: the runner has acted on it, and the server does not know (the
        moment to kill a runner between delivery and acknowledgement)."""
        with self.cond:
            self.hold_acks.add(self.next_id + 1)
            held = self.push("input", input_id=input_id, uuid=uuid, content=content)
        self.wait(lambda: held in self.ack_requests, timeout=timeout, what="the ack request")
        return held

    def stdout(self):
        with self.cond:
            return [self.chunks[seq]["data"] for seq in sorted(self.chunks)
                    if self.chunks[seq]["stream"] == "stdout"]

    def wait(self, predicate, timeout=30, what="a condition"):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {what}"
                self.cond.wait(min(left, 0.1))

    def stdout_json(self):
        found = []
        for text in self.stdout():
            try:
                found.append(json.loads(text))
            except ValueError:
                pass
        return found


class Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # headers and body go in two writes: without this, Nagle and the client's delayed
        # ACK hold each answer ~40 ms (a real server's latency is not the fake's to add)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def state(self):
        return self.server.state

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        state, path = self.state, self.path
        if path == "/api/remote/sessions":
            state.opened = body
            return self.send_json(201, {"session": {"session_id": state.session_id},
                                      "write_token": "tlw_fake"})
        if path.endswith("/output"):
            with state.cond:
                for chunk in body["chunks"]:
                    state.chunks[chunk["seq"]] = chunk
                state.cond.notify_all()
            return self.send_json(200, {"accepted": len(body["chunks"]), "duplicates": 0,
                                      "last_event_index": 0, "usage_counted": 0})
        if path.endswith("/runner"):
            with state.cond:
                state.attached.append(body["controls"])
            return self.send_json(200, {"runner": {"attached": True, "controls": body["controls"],
                                                 "seen_at": "now"}})
        if path.endswith("/complete"):
            with state.cond:
                state.completed = body
                state.cond.notify_all()
            return self.send_json(200, {"session": {"status": "completed"}})
        match = ACK.match(path)
        if match:
            command_id = int(match.group(2))
            with state.cond:
                state.ack_requests.append(command_id)
                state.cond.notify_all()
                held = command_id in state.hold_acks
            if held:
                time.sleep(3600)  # a runner killed -9 meanwhile: never stored
            with state.cond:
                state.acks.setdefault(command_id, body)
                state.acked_at.setdefault(command_id, time.time())
                state.cond.notify_all()
            return self.send_json(200, {"command": {"command_id": command_id}})
        return self.send_json(404, {"error": {"code": "not_found", "message": path}})

    def do_GET(self):  # noqa: N802
        match = COMMANDS.match(self.path)
        if not match or "text/event-stream" not in self.headers.get("Accept", ""):
            return self.send_json(404, {"error": {"code": "not_found", "message": self.path}})
        state = self.state
        last = self.headers.get("Last-Event-ID")
        after = int(last) if last else 0
        with state.cond:
            state.stream_opens.append(last)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            while True:
                with state.cond:
                    due = [c for c in state.commands
                           if c["command_id"] > after and c["command_id"] not in state.acks]
                    if not due:
                        if state.completed is not None:
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        state.cond.wait(1.0)
                        due = None
                if due is None:
                    self._chunk(b": keep-alive\n\n")
                    continue
                for command in due:
                    data = json.dumps(command)
                    state.pushed_at.setdefault(command["command_id"], time.time())
                    self._chunk(f"id: {command['command_id']}\nevent: command\ndata: {data}\n\n"
                                .encode())
                    after = command["command_id"]
        except (BrokenPipeError, ConnectionResetError):
            return

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


@contextmanager
def control_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State()
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        with server.state.cond:
            server.state.completed = server.state.completed or {"closing": True}
            server.state.cond.notify_all()
        server.shutdown()
        server.server_close()
