"""A pass-through HTTP proxy in front of a real server that can hold chosen requests.

The e2e tests put it between `turnlog run` and gunicorn to open, on purpose, the windows
a real run only crosses by chance: an acknowledgement held back while the runner is
killed, or output held back so that a delivered input is seen before its echo applies
it. Everything else passes at once, streamed (the SSE command channel included).

    with HoldingProxy(server.address) as proxy:      # proxy.base is what the runner gets
        hold = proxy.hold(lambda method, path: path.endswith("/ack"))
        hold.wait_held(10)                           # a request matched and waits
        hold.release()                               # forwarded now (or never: drop())
"""
import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer

# Hop-by-hop headers: the proxy's own business on each side, never forwarded.
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-connection", "host", "content-length"}


class Hold:
    """Requests matching `predicate(method, path)` wait until `release()` (forwarded) or
    `drop()` (never forwarded: the connection is closed without an answer)."""

    def __init__(self, predicate):
        self.predicate = predicate
        self.held = []  # (method, path) of each request caught
        self.cond = threading.Condition()
        self.outcome = None  # None while holding, then "release" or "drop"

    def catch(self, method, path):
        """Block a matching request; True when it is to be forwarded."""
        with self.cond:
            self.held.append((method, path))
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.outcome is not None)
            return self.outcome == "release"

    def wait_held(self, timeout, count=1):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.held) >= count, timeout):
                raise AssertionError(f"no request was held in {timeout} s")

    def release(self):
        self._end("release")

    def drop(self):
        self._end("drop")

    def _end(self, outcome):
        with self.cond:
            self.outcome = self.outcome or outcome
            self.cond.notify_all()


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 and chunked, one request a connection: a client reading a stream as it
    # comes (requests' iter_content(None)) reads an unchunked body to its end first
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):  # noqa: N802 (the names http.server calls)
        self._forward()

    def do_POST(self):  # noqa: N802
        self._forward()

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with self.server.lock:
            self.server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        for hold in self.server.matching(self.command, self.path):
            if not hold.catch(self.command, self.path):
                return  # dropped: the client gets no answer (it was killed meanwhile)
        upstream = http.client.HTTPConnection(self.server.upstream)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            response = upstream.getresponse()
            self.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in HOP:
                    self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while chunk := response.read1(65536):  # as it comes: a stream stays live
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            pass  # either side went away; the client sees a dropped connection
        finally:
            upstream.close()

    def log_message(self, *args):
        pass


class HoldingProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream):
        super().__init__(("127.0.0.1", 0), Handler)
        self.upstream = upstream  # host:port
        self.holds = []
        self.seen = []  # (method, path, Authorization header) of every request, in order
        self.lock = threading.Lock()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def hold(self, predicate):
        hold = Hold(predicate)
        with self.lock:
            self.holds.append(hold)
        return hold

    def matching(self, method, path):
        with self.lock:
            return [h for h in self.holds if h.outcome is None and h.predicate(method, path)]

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        with self.lock:
            holds = list(self.holds)
        for hold in holds:
            hold.drop()
        self.shutdown()
        self.server_close()
