"""Slow clients against docs/deploy.md's nginx site in front of real gunicorn (issue:
hostile tenant, item 7): 24 slow-loris clients, sending headers or a body at a byte a
second, do not hold up a normal request, and nginx drops them after its timeouts."""
import socket
import threading
import time

import pytest

from tests import figures
from tests import servers

SLOW_CLIENTS = 24
NORMAL_REQUEST_SECONDS = 2.0
TRICKLED_BYTES = 5
# A slow client trickles TRICKLED_BYTES at a byte a second, then stalls: nginx's
# client_header_timeout / client_body_timeout (10 s in the documented site) drop it.
DROPPED_WITHIN_SECONDS = TRICKLED_BYTES + 10 + 6


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    with servers.gunicorn(tmp_path_factory.mktemp("slow-app")) as app:
        yield app


@pytest.fixture(scope="module")
def proxy(tmp_path_factory, app_server):
    with servers.nginx(tmp_path_factory.mktemp("slow-nginx"), app_server.address) as nginx:
        yield nginx


class SlowClient(threading.Thread):
    """Sends `fast` at once, then `slow` a byte a second, then nothing; records when the
    server closed the connection."""

    def __init__(self, port, fast, slow, give_up_seconds):
        super().__init__(daemon=True)
        self.port, self.fast, self.slow, self.give_up = port, fast, slow, give_up_seconds
        self.closed_after = None

    def run(self):
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            try:
                sock.sendall(self.fast)
                for byte in self.slow:
                    sock.sendall(bytes([byte]))
                    time.sleep(1.0)
                while time.monotonic() - started < self.give_up:
                    try:
                        if sock.recv(65536) == b"":
                            break  # closed (after nginx's 408, if it sent one)
                    except socket.timeout:
                        continue
            except OSError:
                pass  # reset: dropped as well
            else:
                if time.monotonic() - started >= self.give_up:
                    return
            self.closed_after = time.monotonic() - started


def slow_clients(port):
    header_start = b"GET /api/remote/sessions HTTP/1.1\r\nHost: x\r\n"
    body_headers = (b"POST /api/remote/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 100000\r\n\r\n")
    give_up = DROPPED_WITHIN_SECONDS + 10
    return [SlowClient(port, header_start, b"X-Slow", give_up) if n % 2 == 0
            else SlowClient(port, body_headers, b'{"a":', give_up)
            for n in range(SLOW_CLIENTS)]


def test_slow_loris_clients_do_not_block_a_normal_request_and_are_dropped(proxy):
    clients = slow_clients(int(proxy.base.rsplit(":", 1)[1]))
    for client in clients:
        client.start()
    time.sleep(3)  # every slow client is connected and part-way through its request

    normal = []
    for _ in range(3):
        started = time.monotonic()
        status, body = servers.call(proxy.base, "POST", "/api/remote/sessions", {"session_type": "chat"},
                                    timeout=NORMAL_REQUEST_SECONDS * 5)
        took = time.monotonic() - started
        normal.append(took)
        assert status == 201, body
        assert took < NORMAL_REQUEST_SECONDS, f"a normal request took {took:.2f} s among slow clients"

    for client in clients:
        client.join(timeout=DROPPED_WITHIN_SECONDS + 20)
    dropped = [c.closed_after for c in clients if c.closed_after is not None]
    assert len(dropped) == SLOW_CLIENTS, "some slow clients were never dropped"
    figures.record("slow clients [nginx]", slow=SLOW_CLIENTS, normal_max_s=round(max(normal), 3),
                   dropped=len(dropped), slowest_drop_s=round(max(dropped), 1))
    assert max(dropped) < DROPPED_WITHIN_SECONDS, f"the slowest drop came after {max(dropped):.1f} s"
