"""`turnlog follow` and `turnlog run` against a --server that cannot be right: one line
naming the fix and exit 125, at once; against a server that is not there: they say so
while they retry (each took for ever, silently or with raw library errors, before)."""
import http.server
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import servers
from tests.http_handlers import QuietHandler

TURNLOG = Path(sys.executable).parent / "turnlog"
SESSION = "5e0c2d1e-0000-4000-8000-000000000000"


class NotTurnlog(QuietHandler):
    """A web server with no turnlog behind it: an HTML 404 for everything."""

    def do_GET(self):
        self._not_found()

    def do_POST(self):
        self._not_found()

    def _not_found(self):
        self.send_body(404, b"<html><body><h1>Not Found</h1></body></html>", "text/html")


@contextmanager
def not_turnlog():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotTurnlog)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def turnlog(*args, tmp_path):
    # (run takes a runner token, follow a user token: a run refuses a user token at once)
    token = "tlr_test" if args[0] == "run" else "tlu_test"
    env = {**os.environ, "TURNLOG_TOKEN": token, "XDG_STATE_HOME": str(tmp_path)}
    env.pop("TURNLOG_SERVER", None)
    started = time.monotonic()
    done = subprocess.run([TURNLOG, *args], env=env, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - started


def run_args(server):
    return ["run", "--server", server, "--", sys.executable, "-c", "print('hi')"]


@pytest.mark.parametrize("server, fix", [
    ("127.0.0.1:8000", "use http://127.0.0.1:8000"),
    ("http://127.0.0.1:8000/api", "give the server's root URL, http://127.0.0.1:8000"),
])
@pytest.mark.parametrize("command", ["follow", "run"])
def test_a_url_that_cannot_be_right_is_one_line_and_exit_125(tmp_path, command, server, fix):
    args = ["follow", "--server", server, SESSION] if command == "follow" else run_args(server)
    done, _ = turnlog(*args, tmp_path=tmp_path)
    assert done.returncode == 125, done.stderr
    assert fix in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["follow", "run"])
def test_https_to_a_plain_http_server_says_use_http(tmp_path, command):
    with not_turnlog() as address:
        server = f"https://{address}"
        args = ["follow", "--server", server, SESSION] if command == "follow" else run_args(server)
        done, seconds = turnlog(*args, tmp_path=tmp_path)
    assert done.returncode == 125, done.stderr
    assert f"answers plain HTTP, not TLS: use http://{address}" in done.stderr
    assert seconds < 20  # not retried
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["follow", "run"])
def test_a_server_that_is_no_turnlog_says_so(tmp_path, command):
    with not_turnlog() as address:
        server = f"http://{address}/somewhere"
        args = ["follow", "--server", server, SESSION] if command == "follow" else run_args(server)
        done, _ = turnlog(*args, tmp_path=tmp_path)
    assert done.returncode == 125, done.stderr
    assert f"no turnlog API at {server}" in done.stderr and "root URL" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def turnlog_server(tmp_path_factory):
    with servers.gunicorn(tmp_path_factory.mktemp("misconfigured"), workers=1) as served:
        yield served


@pytest.mark.parametrize("command", ["follow", "follow --raw", "run"])
def test_a_path_under_a_turnlog_server_names_its_root(tmp_path, turnlog_server, command):
    # turnlog's own JSON 404 for a route it has not (its Werkzeug text before, and follow
    # exited 1); follow's /events-to-/stream fallback must not hide it
    server = f"{turnlog_server.base}/turnlog"
    follow = command.split() + ["--server", server, SESSION]
    done, _ = turnlog(*(run_args(server) if command == "run" else follow), tmp_path=tmp_path)
    assert done.returncode == 125, done.stderr
    assert (f"no turnlog API at {server}: give the server's root URL, e.g."
            f" {turnlog_server.base}") in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "requested URL" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["follow", "run"])
def test_a_server_that_is_not_there_is_said_while_retrying(tmp_path, command):
    server = f"http://127.0.0.1:{servers.free_port()}"
    args = ["follow", "--server", server, SESSION] if command == "follow" else run_args(server)
    token = "tlr_test" if command == "run" else "tlu_test"
    env = {**os.environ, "TURNLOG_TOKEN": token, "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.Popen([TURNLOG, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        assert proc.poll() is None  # still retrying
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert f"cannot reach {server}: connection refused" in err and "retrying" in err, err
    if command == "run":
        assert "the agent has not started" in err
    assert "HTTPConnectionPool" not in err and "Max retries" not in err
