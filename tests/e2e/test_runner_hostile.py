"""`turnlog run` as a real process against a scripted HTTP server (issue 29): a batch that
fails on the server every time is given up, signals end a retrying runner, the agent
child finds no token, one run at a time per spool, session ids that are not UUIDs, and
malformed spools. Each keeps the spool and exits with its documented code."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from app.client.errors import Unreachable
from app.client.http import Client
from app.client.spool import Spool
from app.client.spool import load
from app.client.spool import spool_path
from tests import servers
from tests.figures import record
from tests.http_handlers import QuietHandler

TURNLOG = Path(sys.executable).parent / "turnlog"
DEADLINE = 60
RUNNER_FAILED, BATCH_GIVEN_UP, SPOOL_LOCKED = 125, 124, 123
PRINT_3 = [sys.executable, "-c", "for i in range(3): print(f'line {i}')"]


class Scripted(QuietHandler):
    """Opens sessions (id `server.session_id`), answers posts of output as `server.output`
    says: "ok", "500", "503" (busy: retry, never counts) or "drop" (no answer at all)."""

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        length = int(self.headers.get("Content-Length") or 0)
        self.server.bodies.append(json.loads(self.rfile.read(length) or b"{}"))
        self.server.posts.append(self.path)
        if self.path == "/api/remote/sessions":
            self.send_json(201, {"session": {"session_id": self.server.session_id},
                               "write_token": self.server.write_token})
        elif self.path.endswith("/output"):
            mode = self.server.output
            if mode == "drop":
                self.close_connection = True  # as a worker killed mid-request
            elif mode == "hang":
                time.sleep(2)
            elif mode in ("500", "503"):
                self.send_json(int(mode), {"error": {"code": "boom", "message": "scripted"}})
            else:
                self.send_json(200, {"accepted": 3, "duplicates": 0, "last_event_index": 2,
                                   "usage_counted": 0})
        else:  # complete
            self.send_json(200, {"session": {"status": "completed"}})


@pytest.fixture
def scripted():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.daemon_threads = True
    server.session_id, server.output = str(uuid.uuid4()), "ok"
    server.posts, server.bodies = [], []
    server.write_token = "tlr_write_" + uuid.uuid4().hex
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def start(base, spool, command, *extra, token="tlr_runner_0123456789", env=None, **popen):
    args = [TURNLOG, "run", "--server", base, "--spool", str(spool), *extra, "--", *command]
    full_env = {key: value for key, value in os.environ.items() if key != "TURNLOG_TOKEN"}
    if token is not None:
        full_env["TURNLOG_TOKEN"] = token
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**full_env, **(env or {})}, **popen)


def finish(proc):
    _, err = proc.communicate(timeout=DEADLINE)
    return proc.returncode, err


def wait_for(proc, words):
    """Read the runner's stderr until a line holds `words`; the lines read."""
    seen = []
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        text = proc.stderr.readline()
        assert text, "".join(seen)
        seen.append(text)
        if words in text:
            return "".join(seen)
    raise AssertionError("".join(seen))


@pytest.mark.parametrize("failure", ["500", "drop"])
def test_a_batch_that_fails_on_the_server_every_time_is_given_up_with_its_spool_kept(
        scripted, tmp_path, failure):
    scripted.output = failure
    started = time.monotonic()
    code, err = finish(start(scripted.base, tmp_path, PRINT_3))
    seconds = time.monotonic() - started
    assert code == BATCH_GIVEN_UP, err
    assert "gave up on the batch of seqs 0..2 after it failed on the server 5 times" in err
    assert "Traceback" not in err and seconds < 30
    assert sum(path.endswith("/output") for path in scripted.posts) == 5  # the default
    state, _ = load(spool_path(tmp_path, scripted.session_id))
    assert [line["data"] for line in state.unacked] == ["line 0", "line 1", "line 2"]
    assert f"--session {scripted.session_id}" in err
    record(f"runner: batch given up [{failure}]", posts=5, seconds=round(seconds, 1))


def test_the_limit_is_an_option_and_a_busy_server_does_not_count(scripted, tmp_path):
    scripted.output = "500"
    code, err = finish(start(scripted.base, tmp_path, PRINT_3,
                             env={"TURNLOG_MAX_BATCH_FAILURES": "2"}))
    assert code == BATCH_GIVEN_UP and "2 times in a row" in err
    assert sum(path.endswith("/output") for path in scripted.posts) == 2


def test_a_spool_folder_open_to_others_is_named_and_one_made_by_the_runner_is_0700(scripted,
                                                                                  tmp_path):
    opened, made = tmp_path / "open", tmp_path / "made" / "spool"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    code, err = finish(start(scripted.base, opened, PRINT_3))
    assert code == 0 and f"chmod 700 {opened}" in err
    code, err = finish(start(scripted.base, made, PRINT_3))
    assert code == 0 and "chmod" not in err
    assert made.stat().st_mode & 0o777 == made.parent.stat().st_mode & 0o777 == 0o700


def test_whether_a_request_reached_the_server(scripted):
    scripted.output = "hang"
    with pytest.raises(Unreachable) as hung:
        Client(scripted.base, "t", timeout=0.3).post_output(scripted.session_id, [])
    assert hung.value.reached  # read timeout: the server had it
    with pytest.raises(Unreachable) as refused:
        Client(f"http://127.0.0.1:{servers.free_port()}", "t").post_output("x", [])
    assert not refused.value.reached


# Prints 3 lines, notes its pid in the file argv[1], and sleeps.
PRINT_3_AND_SLEEP = ("import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\n"
                     "for i in range(3): print(f'line {i}', flush=True)\ntime.sleep(60)")


@pytest.mark.parametrize("number, running", [
    (signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGTERM, True)],
    ids=["SIGTERM-child-exited", "SIGINT-child-exited", "SIGTERM-child-running"])
def test_a_signal_ends_a_retrying_runner_spool_kept(scripted, tmp_path, number, running):
    scripted.output = "503"  # busy for ever: retried, never given up
    pid_file = tmp_path / "child.pid"
    child = [sys.executable, "-c", PRINT_3_AND_SLEEP, str(pid_file)] if running else PRINT_3
    proc = start(scripted.base, tmp_path, child)
    wait_for(proc, "retrying")
    time.sleep(0.5)  # the child has printed its 3 lines (and exited, unless running) by now
    proc.send_signal(number)
    started = time.monotonic()
    code, err = finish(proc)
    seconds = time.monotonic() - started
    assert code == 128 + number, err
    assert seconds < 5
    assert f"stopped by {signal.Signals(number).name}" in err and "Traceback" not in err
    state, _ = load(spool_path(tmp_path, scripted.session_id))
    assert [line["data"] for line in state.unacked] == ["line 0", "line 1", "line 2"]
    if running:  # the child went with it
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)
    record(f"runner: {signal.Signals(number).name} while retrying", seconds=round(seconds, 2))


def test_a_signal_ends_a_runner_waiting_for_an_absent_server(tmp_path):
    proc = start(f"http://127.0.0.1:{servers.free_port()}", tmp_path, PRINT_3)
    wait_for(proc, "opening a session")
    proc.send_signal(signal.SIGTERM)
    code, err = finish(proc)
    assert code == 128 + signal.SIGTERM and "Traceback" not in err, err


# The agent child: looks for any runner or write token (both start with the runner prefix;
# the test's own are in a file, since the child's argv is in the runner's cmdline) in its
# environment, its descriptors, and the environ and cmdline of each ancestor up to the
# test process; prints what it found.
SNOOP = r"""
import json, os, sys
secrets, stop = json.load(open(sys.argv[1])), int(sys.argv[2])
found = []
def look(where, data):
    for secret in secrets + ["tlr" + "_"]:
        if secret.encode() in data:
            found.append(f"{secret[:12]} in {where}")
look("own environ", b"\0".join(k.encode() + b"=" + v.encode() for k, v in os.environ.items()))
fds = os.listdir("/proc/self/fd")  # 0, 1, 2 and the one listing them
if len(fds) > 4:
    found.append(f"inherited descriptors {sorted(fds)}")
pid = os.getppid()
while pid not in (stop, 0, 1):
    for name in ("environ", "cmdline"):
        with open(f"/proc/{pid}/{name}", "rb") as f:
            look(f"/proc/{pid}/{name}", f.read())
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
print("FOUND " + "; ".join(found) if found else "CLEAN", os.environ.get("TURNLOG_SESSION_ID"))
"""


@pytest.mark.parametrize("way", ["env", "argument", "file", "fd", "env and file"])
def test_the_agent_child_finds_no_token_in_its_env_its_fds_or_the_runners_proc(
        scripted, tmp_path, way):
    token = "tlr_runner_" + uuid.uuid4().hex
    extra, popen, env_token = [], {}, None
    if way == "argument":
        extra = ["--token", token]
    if way in ("file", "env and file"):
        (tmp_path / "token").write_text(token + "\n")
        extra = ["--token-file", str(tmp_path / "token")]
    if way in ("env", "env and file"):
        env_token = token
    if way == "fd":
        read_end, write_end = os.pipe()
        os.write(write_end, token.encode())
        os.close(write_end)
        extra, popen = ["--token-fd", str(read_end)], {"pass_fds": (read_end,)}
    (tmp_path / "secrets.json").write_text(json.dumps([token, scripted.write_token]))
    proc = start(scripted.base, tmp_path / "spool", [sys.executable, "-c", SNOOP,
                                                      str(tmp_path / "secrets.json"),
                                                      str(os.getpid())],
                 *extra, token=env_token, env={"MY_COPY": token}, **popen)
    if way == "fd":
        os.close(read_end)
    code, err = finish(proc)
    assert code == 0, err
    posted = scripted.posts
    assert posted[0] == "/api/remote/sessions" and posted[-1].endswith("/complete")
    printed = [chunk["data"] for body in scripted.bodies for chunk in body.get("chunks", ())]
    assert printed == [f"CLEAN {scripted.session_id}"]


def test_a_second_run_continuing_the_same_session_refuses_at_start(scripted, tmp_path):
    sid = scripted.session_id
    Spool.create(tmp_path, sid, scripted.base).close()
    scripted.output = "503"
    first = start(scripted.base, tmp_path, PRINT_3, "--session", sid)
    wait_for(first, "retrying")
    code, err = finish(start(scripted.base, tmp_path, PRINT_3, "--session", sid))
    assert code == SPOOL_LOCKED, err
    assert f"{spool_path(tmp_path, sid)} is in use by another `turnlog run`" in err
    first.send_signal(signal.SIGTERM)
    assert finish(first)[0] == 128 + signal.SIGTERM
    assert len(load(spool_path(tmp_path, sid))[0].unacked) == 3  # the first one's, kept


@pytest.mark.parametrize("bad", ["../../escaped", "/etc/passwd", "x"])
def test_a_session_option_that_is_not_a_uuid_is_refused_before_anything(scripted, tmp_path, bad):
    code, err = finish(start(scripted.base, tmp_path / "spool", PRINT_3, "--session", bad))
    assert code == 2 and "is not a session id (a UUID" in err
    assert scripted.posts == [] and not (tmp_path / "spool").exists()


def test_a_session_id_from_the_server_that_is_not_a_uuid_never_becomes_a_path(scripted, tmp_path):
    scripted.session_id = "../../escaped"
    spool = tmp_path / "a" / "b" / "spool"
    code, err = finish(start(scripted.base, spool, PRINT_3))
    assert code == RUNNER_FAILED, err
    assert "answered with session id '../../escaped', which is not a UUID" in err
    assert not list(tmp_path.rglob("*escaped*")) and not spool.exists()


def test_a_malformed_spool_ends_with_125_naming_the_file_and_line(scripted, tmp_path):
    sid = scripted.session_id
    Spool.create(tmp_path, sid, scripted.base).close()
    path = spool_path(tmp_path, sid)
    path.write_bytes(path.read_bytes() + b'{"seq": "zero", "stream": "stdout", "data": "x"}\n')
    code, err = finish(start(scripted.base, tmp_path, PRINT_3, "--session", sid))
    assert code == RUNNER_FAILED, err
    assert f"{path}: line 2: bad record" in err and "Traceback" not in err
    assert scripted.posts == []
