"""A minimal fake Anthropic Messages API, enough to run the real Claude Code CLI offline in
the test of `turnlog run --interactive` against it (tests/e2e/test_runner_interactive_claude.py).

It answers from the LAST user message: text containing `RUN <command>` gets a Bash tool
call of that command; a tool result gets `tool said: <first line>`; anything else gets
`echo: <text>`; text containing `SLOW` waits 5 s before its text (for an interrupt
to land in the turn). `POST /v1/messages` streams (SSE) or answers JSON as asked;
`POST /v1/messages/count_tokens` counts 10. To be replaced by the shared fakes of
tests/agents/ when they land.
"""
import json
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

from tests.http_handlers import QuietHandler


def _last_user(messages):
    for message in reversed(messages):
        if message.get("role") == "user":
            return message.get("content")
    return ""


def _reply(body):
    """(kind, value): ("tool", command) or ("text", text)."""
    content = _last_user(body.get("messages") or [])
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for block in blocks:
        if block.get("type") == "tool_result":
            result = block.get("content")
            if isinstance(result, list):
                result = " ".join(part.get("text", "") for part in result)
            first = (result or "").strip().splitlines()[:1]
            return "text", f"tool said: {first[0] if first else ''}"
    text = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text").strip()
    if body.get("tools") and "RUN " in text:
        return "tool", text.split("RUN ", 1)[1].split("\n")[0].strip()
    return "text", f"echo: {text.splitlines()[-1] if text else ''}"


def _events(kind, value, model):
    message_id = f"msg_{uuid.uuid4().hex[:16]}"
    yield "message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}
    if kind == "tool":
        yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:16]}", "name": "Bash",
            "input": {}}}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(
                {"command": value, "description": "run it"})}}
        stop = "tool_use"
    else:
        yield "content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": value}}
        stop = "end_turn"
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                               "stop_sequence": None},
                            "usage": {"output_tokens": 5}}
    yield "message_stop", {"type": "message_stop"}


class Handler(QuietHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.startswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": 10})
        if not self.path.startswith("/v1/messages"):
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                 "message": self.path}})
        kind, value = _reply(body)
        with self.server.lock:
            self.server.requests.append(body)
        model = body.get("model", "claude-fake")
        if not body.get("stream"):
            content = ([{"type": "text", "text": value}] if kind == "text" else
                       [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                         "input": {"command": value}}])
            return self.send_json(200, {"id": "msg_1", "type": "message", "role": "assistant",
                                        "model": model, "content": content,
                                        "stop_reason": "end_turn" if kind == "text" else "tool_use",
                                        "usage": {"input_tokens": 10, "output_tokens": 5}})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in _events(kind, value, model):
            if name == "content_block_start" and kind == "text" and "SLOW" in value:
                time.sleep(5)
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()


@contextmanager
def fake_anthropic():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.requests = []
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
