"""What the three fake model servers share: a threaded HTTP server on a free loopback
port with TCP_NODELAY (else each streamed chunk waits ~40 ms for an ACK), JSON bodies,
server-sent events, and a record of every request it got."""
import json
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer

from tests.agents import scenarios
from tests.http_handlers import QuietHandler


class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler, scenario):
        super().__init__(("127.0.0.1", 0), handler)
        self.scenario = scenarios.load(scenario) if isinstance(scenario, str) else scenario
        self.requests = []  # {"method", "path", "body"} in the order they came
        self.lock = threading.Lock()
        self.failed_once = set()  # the `then` errors given already
        self.thread = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()

    def handle_error(self, request, client_address):
        # a CLI that hangs up mid-stream (an interrupted turn) is no error of the fake's
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)

    def record(self, method, path, body):
        with self.lock:
            self.requests.append({"method": method, "path": path, "body": body})

    def once(self, reply):
        """`reply`, or its `then` when it is an error given once already (the CLI retried)."""
        if "then" not in reply:
            return reply
        key = json.dumps(reply, sort_keys=True)
        with self.lock:
            if key in self.failed_once:
                return reply["then"]
            self.failed_once.add(key)
        return reply

    def model_calls(self):
        """The recorded requests that had tools (the agent's own turns, not side requests)."""
        return [r for r in self.requests if self.has_tools(r["body"])]

    @staticmethod
    def has_tools(body):
        return bool(isinstance(body, dict) and body.get("tools"))


class Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else {}
        self.server.record(self.command, self.path, body)
        return body

    def start_events(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, data, name=None, delay=0):
        if delay:
            time.sleep(delay)
        head = f"event: {name}\n" if name else ""
        self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
