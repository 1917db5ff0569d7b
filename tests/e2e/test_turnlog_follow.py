"""`turnlog follow` and the client's readers against real gunicorn: live text, a line per
tool call, resume after the server dies under it, raw lines, and message pages."""
import subprocess
import sys
import time
from pathlib import Path

from app.client import Client
from tests import servers
from tests.e2e.test_runner import AGENT
from tests.e2e.test_runner import DEADLINE
from tests.e2e.test_runner import expected_rows
from tests.e2e.test_runner import session_id_from
from tests.figures import record

TURNLOG = Path(sys.executable).parent / "turnlog"


def tokens(server):
    return (server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
            server.new_token("create-user-token", "--user", "alice"))


def start(server, runner, spool, lines, pause):
    proc = subprocess.Popen([TURNLOG, "run", "--server", server.base, "--token", runner, "--spool",
                             str(spool), "--", *AGENT, "--lines", str(lines), "--pause", str(pause)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, session_id_from(proc)


def follow(server, user, sid, *extra):
    return subprocess.Popen([TURNLOG, "follow", "--server", server.base, "--token", user, *extra,
                             sid], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def output(proc):
    out, err = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == 0, err
    return out, err


def test_follow_prints_the_session_live_and_the_same_as_a_replay(tmp_path):
    with servers.gunicorn(tmp_path, auth=True) as server:
        runner, user = tokens(server)
        run, sid = start(server, runner, tmp_path / "spool", 60, 0.02)
        live = follow(server, user, sid)
        run.communicate(timeout=DEADLINE)
        assert run.returncode == 3
        live_out, live_err = output(live)
        replay_out, _ = output(follow(server, user, sid))
    assert live_out == replay_out
    assert live_out.count("line 1 of turn 0") == 1
    assert "> Bash(echo 2)\n  = out 3\n  = more 3\n" in live_out
    assert live_err.startswith(f"turnlog: session {sid}: agent, claude, ")  # the header
    assert live_out.endswith("[session failed, exit code 3]\n")
    assert '"type"' not in live_out  # no raw JSON in the terminal view


def test_follow_resumes_after_the_server_is_killed_with_no_line_lost_or_repeated(tmp_path):
    with servers.gunicorn(tmp_path, auth=True) as first:
        runner, user = tokens(first)
        run, sid = start(first, runner, tmp_path / "spool", 150, 0.02)
        live = follow(first, user, sid)
        time.sleep(1.0)
        servers.kill_hard(first)
        time.sleep(0.5)
        with servers.gunicorn_again(first) as second:
            run.communicate(timeout=DEADLINE)
            live_out, _ = output(live)
            replay_out, _ = output(follow(second, user, sid))
    assert live_out == replay_out
    texts = [f"line {i} of turn" for i in range(150) if f"line {i} of turn" in replay_out]
    assert len(texts) > 50 and all(live_out.count(text + " ") == 1 for text in texts)
    record("follow: server kill -9", text_blocks=len(texts), lost=0, repeated=0)


def test_follow_raw_prints_the_stdout_and_stderr_lines_as_posted(tmp_path):
    with servers.gunicorn(tmp_path, auth=True) as server:
        runner, user = tokens(server)
        run, sid = start(server, runner, tmp_path / "spool", 30, 0.0)
        run.communicate(timeout=DEADLINE)
        out, err = output(follow(server, user, sid, "--raw"))
    stdout, stderr = expected_rows(0, 30)
    assert out.splitlines() == [data for _, data in stdout] + ["[session failed, exit code 3]"]
    assert err.splitlines() == [data for _, data in stderr]


def test_the_client_pages_messages_and_follows_events_from_python(tmp_path):
    with servers.gunicorn(tmp_path, auth=True) as server:
        runner, user = tokens(server)
        run, sid = start(server, runner, tmp_path / "spool", 40, 0.0)
        run.communicate(timeout=DEADLINE)
        client = Client(server.base, user)
        session = client.get_session(sid)
        paged = list(client.messages(sid, page_size=2))
        events = list(client.follow(sid))
        resumed = list(client.follow(sid, after=events[len(events) // 2].id))
    assert [m["id"] for m in paged] == [m["id"] for m in session["messages"]]
    assert len(paged) == session["message_count"] > 2
    assert events[-1].event == "end" and resumed == events[len(events) // 2 + 1:]
