"""The base of the tests' small HTTP servers (fake turnlog servers, fake model APIs,
proxies): answers with a body of known length, and no access log on stderr."""
import json
from http.server import BaseHTTPRequestHandler


class QuietHandler(BaseHTTPRequestHandler):
    def send_body(self, status, data, content_type):
        """One whole answer: `data` (bytes) with its type and length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, status, obj):
        self.send_body(status, json.dumps(obj).encode(), "application/json")

    def log_message(self, *args):
        pass
