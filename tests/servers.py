"""Real servers for end-to-end tests: gunicorn on a free loopback port, nginx in front.

Both are context managers, so a fixture is `with servers.gunicorn(tmp) as app: yield app`.
The nginx site is the one `docs/deploy.md` documents, read from that file, with only the
upstream address and the listen port changed.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import closing
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
DOC_UPSTREAM = "server 127.0.0.1:8000;"
DOC_LISTEN = "listen 80;"
START_SECONDS = 20
STOP_SECONDS = 10


@dataclass(frozen=True)
class Gunicorn:
    base: str  # http://127.0.0.1:<port>
    address: str  # 127.0.0.1:<port>
    db_file: Path | None  # the SQLite file, None when serving `database_url`
    log: Path
    env: dict  # the environment it was started with (for CLI commands on its database)
    master_pid: int  # gunicorn's master; its children are the workers

    def new_token(self, *args):
        """A token from `flask create-runner-token --machine M` / `create-user-token --user U`."""
        done = subprocess.run([BIN / "flask", "--app", "wsgi", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


@dataclass(frozen=True)
class Nginx:
    base: str
    conf: Path
    error_log: Path


def free_port():
    """A loopback port nothing listens on right now."""
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(base, method, path, body=None, timeout=30, token=None):
    """(status, JSON body) of one request; HTTP errors are returned, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@contextmanager
def gunicorn(tmp_dir, env=None, workers=2, threads=4, database_url=None, auth=False, address=None):
    """Migrate a database, serve it with gunicorn.conf.py, stop it after.

    The database is `database_url` when given (several servers may share one), else a
    fresh SQLite file in `tmp_dir`. Authentication is off unless `auth` (then make
    tokens with `server.new_token(...)`). `address` (host:port) picks where it listens.
    """
    tmp_dir = Path(tmp_dir)
    db_file = None if database_url else tmp_dir / "served.sqlite"
    log = tmp_dir / "gunicorn.log"
    address = address or f"127.0.0.1:{free_port()}"
    full_env = {**os.environ, **(env or {}),
                "TURNLOG_SQLALCHEMY_DATABASE_URI": database_url or f"sqlite:///{db_file}",
                "GUNICORN_BIND": address, "GUNICORN_WORKERS": str(workers),
                "GUNICORN_THREADS": str(threads),
                "TURNLOG_AUTH_DISABLED": "false" if auth else "true",
                "TURNLOG_SECRET_KEY": "tests-only-secret",
                # gunicorn >= 25.1 opens a control socket there, not in ~/.gunicorn.
                "XDG_RUNTIME_DIR": str(tmp_dir)}
    upgrade = subprocess.run([BIN / "flask", "--app", "wsgi", "db-upgrade"], cwd=ROOT,
                             env=full_env, capture_output=True, text=True)
    if upgrade.returncode != 0:
        pytest.fail(f"db-upgrade failed:\n{upgrade.stdout}{upgrade.stderr}")
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([BIN / "gunicorn"], cwd=ROOT, env=full_env,
                                stdout=log_file, stderr=subprocess.STDOUT)
    server = Gunicorn(f"http://{address}", address, db_file, log, full_env, proc.pid)
    with _terminated_at_exit(proc):
        _wait_until_up(server.base, proc, "gunicorn", log)
        yield server


@contextmanager
def gunicorn_again(server):
    """Serve `server`'s database again on its address and environment, after it died
    (kill -9); the new master's Gunicorn is yielded."""
    with open(server.log, "ab") as log_file:
        proc = subprocess.Popen([BIN / "gunicorn"], cwd=ROOT, env=server.env,
                                stdout=log_file, stderr=subprocess.STDOUT)
    with _terminated_at_exit(proc):
        _wait_until_up(server.base, proc, "gunicorn", server.log)
        yield replace(server, master_pid=proc.pid)


def reap(proc, timeout=90):
    """A test that failed half-way leaves no process behind (a runner, an agent), nor its
    pipes open."""
    if proc.poll() is None:
        proc.kill()
    if proc.returncode is None or (proc.stderr is not None and not proc.stderr.closed):
        proc.communicate(timeout=timeout)


def kill_hard(server):
    """kill -9 the master and every worker of `server`: nothing gets to clean up."""
    workers = worker_pids(server.master_pid)
    for pid in [server.master_pid, *workers]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def nginx_binary():
    """Path to nginx; fails under CI (which must install it), skips elsewhere."""
    found = shutil.which("nginx")
    if found is None and os.access("/usr/sbin/nginx", os.X_OK):
        found = "/usr/sbin/nginx"
    if found is None:
        reason = "nginx is not installed (apt-get install nginx); the proxy tests need it"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must install it (.ci/run does)", pytrace=False)
        pytest.skip(reason)
    return found


def site_config(upstream, port):
    """docs/deploy.md's nginx site, pointed at `upstream` and listening on loopback `port`."""
    blocks = re.findall(r"^```nginx\n(.*?)^```", DEPLOY_DOC.read_text("utf-8"), re.M | re.S)
    assert len(blocks) == 1, "docs/deploy.md must hold exactly one ```nginx block"
    site = blocks[0]
    for old in (DOC_UPSTREAM, DOC_LISTEN):
        assert site.count(old) == 1, f"docs/deploy.md's nginx block must contain {old!r} once"
    return (site.replace(DOC_UPSTREAM, f"server {upstream};")
                .replace(DOC_LISTEN, f"listen 127.0.0.1:{port};"))


def nginx_config(tmp_dir, upstream, port):
    """A whole nginx.conf around the documented site, with every path under `tmp_dir`.

    gzip is on for the whole http block, as in Debian's nginx.conf, so the site's own
    `gzip off` for streams is what is being tested.
    """
    tmp = Path(tmp_dir)
    # A root master starts its workers as `nobody`, who cannot enter pytest's tmp dirs.
    user = "user root;\n" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    temp_paths = "".join(f"    {name}_temp_path {tmp / name};\n"
                         for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"{user}daemon off;\nworker_processes 1;\npid {tmp / 'nginx.pid'};\n"
            f"error_log {tmp / 'error.log'} warn;\n"
            "events {\n    worker_connections 256;\n}\n"
            "http {\n    access_log off;\n"
            f"{temp_paths}"
            "    gzip on;\n    gzip_min_length 1;\n"
            "    gzip_types text/event-stream application/json text/plain;\n"
            f"{site_config(upstream, port)}}}\n")


@contextmanager
def nginx(tmp_dir, upstream):
    """nginx in front of `upstream` (host:port) on a free loopback port; stopped after."""
    binary = nginx_binary()
    tmp = Path(tmp_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(nginx_config(tmp, upstream, port), "utf-8")
    error_log = tmp / "error.log"
    command = [binary, "-c", str(conf), "-p", str(tmp), "-e", str(error_log)]
    check = subprocess.run([*command, "-t"], capture_output=True, text=True)
    if check.returncode != 0:
        pytest.fail(f"nginx rejected the documented config:\n{check.stderr}")
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Nginx(f"http://127.0.0.1:{port}", conf, error_log)
    with _terminated_at_exit(proc):
        _wait_until_up(server.base, proc, "nginx", error_log)
        yield server


@contextmanager
def _terminated_at_exit(proc):
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_SECONDS)


def _wait_until_up(base, proc, name, log):
    """Poll a cheap endpoint until the app answers it (200, or 401 with authentication
    on), or fail with the server's log."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            status, _ = call(base, "GET", "/api/remote/sessions?limit=1", timeout=5)
            if status in (200, 401):
                return
        except (OSError, ValueError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text("utf-8", "replace")[-3000:] if log.exists() else ""
            pytest.fail(f"{name} did not start (exit code {proc.poll()}):\n{tail}")
        time.sleep(0.1)


def worker_pids(master_pid):
    """The live worker processes of a gunicorn master: its children, read from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text("utf-8")
        except OSError:  # exited while we looked
            continue
        # the command name, in parentheses, may hold spaces: count fields after the last ")"
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == master_pid and state != "Z":
            pids.append(int(entry.name))
    return sorted(pids)
