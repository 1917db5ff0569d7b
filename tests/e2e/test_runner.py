"""`turnlog run` against real gunicorn, wrapping tests/fake_agent.py (Claude stream-json
with pauses, exit code 3): the transcript, crashes of either side, an absent server,
and refusals that must end the run at once."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.client.spool import load
from app.client.spool import spool_path
from tests import servers
from tests.fake_agent import line
from tests.fake_agent import stderr_line
from tests.figures import record

TURNLOG = Path(sys.executable).parent / "turnlog"
AGENT = [sys.executable, str(Path(__file__).resolve().parents[1] / "fake_agent.py")]
RUNNER_FAILED = 125
DEADLINE = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with servers.gunicorn(tmp_path_factory.mktemp("runner"), auth=True) as served:
        yield served


def tokens(server):
    return (server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
            server.new_token("create-user-token", "--user", "alice"))


def start_run(base, token, spool, agent_args, *extra):
    return subprocess.Popen([TURNLOG, "run", "--server", base, "--token", token, "--spool",
                             str(spool), *extra, "--", *AGENT, *agent_args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=DEADLINE):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def session_id_of(err):
    return err.split("turnlog: session ", 1)[1].split()[0]


def session_id_from(proc):
    """The session id the runner prints first on stderr (read while it runs)."""
    first = proc.stderr.readline()
    assert first.startswith("turnlog: session "), first
    return first.split()[-1]


def expected_rows(start, stop):
    """(stream, line) the agent prints for lines start..stop-1, stdout in order, stderr in order."""
    out = [("stdout", line(i)) for i in range(start, stop)]
    err = [("stderr", text) for i in range(start, stop) if (text := stderr_line(i)) is not None]
    return out, err


def stored(db_file, session_id):
    with sqlite3.connect(db_file) as conn:
        return conn.execute("SELECT producer_seq, stream, payload FROM remote_runtime_outputs"
                            " WHERE session_id = ? ORDER BY event_index", (session_id,)).fetchall()


def check_each_line_once(rows, out, err):
    """Every line stored once, seqs 0..n-1, each stream in the agent's order."""
    seqs = [seq for seq, _, _ in rows]
    assert sorted(seqs) == list(range(len(rows)))
    by_seq = sorted(rows)
    assert [(s, p) for _, s, p in by_seq if s == "stdout"] == out
    assert [(s, p) for _, s, p in by_seq if s == "stderr"] == err


def wait_for_rows(db_file, session_id, count, proc):
    deadline = time.monotonic() + DEADLINE
    while len(stored(db_file, session_id)) < count:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def transcript(base, token, session_id):
    status, body = servers.call(base, "GET", f"/api/remote/sessions/{session_id}", token=token)
    assert status == 200, body
    session = body["session"]
    messages = [(m["role"], m["content"], m["content_blocks"]) for m in session["messages"]]
    counters = {key: session[key] for key in (
        "status", "exit_code", "message_count", "conversation_turn_count",
        "visible_message_count", "request_count", "total_input_tokens", "total_output_tokens")}
    return messages, counters


def test_the_transcript_through_turnlog_run_equals_direct_ingest_and_it_exits_3(server, tmp_path):
    runner, user = tokens(server)
    proc = start_run(server.base, runner, tmp_path, ["--lines", "60", "--pause", "0.005"])
    code, err = finish(proc)
    assert code == 3, err
    sid = session_id_of(err)
    assert f"turnlog: viewer {server.base}/sessions/{sid}" in err
    assert not spool_path(tmp_path, sid).exists()  # completed: nothing left to resend

    _, opened = servers.call(server.base, "POST", "/api/remote/sessions",
                             {"session_type": "agent"}, token=runner)
    direct = opened["session"]["session_id"]
    out, errs = expected_rows(0, 60)
    chunks = [{"seq": seq, "stream": s, "data": d} for seq, (s, d) in enumerate(out + errs)]
    assert servers.call(server.base, "POST", f"/api/remote/sessions/{direct}/output",
                        {"chunks": chunks}, token=runner)[0] == 200
    for seq, (_, data) in enumerate(out):
        if '"type": "result"' in data:
            report = {"report_id": f"line-{seq}", "input_tokens": 100, "output_tokens": 20,
                      "requests": 1}
            servers.call(server.base, "POST", f"/api/remote/sessions/{direct}/usage", report,
                         token=runner)
    servers.call(server.base, "POST", f"/api/remote/sessions/{direct}/complete",
                 {"exit_code": 3}, token=runner)

    through_run, direct_ingest = transcript(server.base, user, sid), transcript(server.base, user, direct)
    assert through_run == direct_ingest
    assert through_run[1]["status"] == "failed" and through_run[1]["exit_code"] == 3
    results = sum('"type": "result"' in data for _, data in out)
    assert results > 5 and through_run[1]["request_count"] == results
    assert through_run[1]["total_input_tokens"] == 100 * results
    assert len(through_run[0]) >= results
    check_each_line_once(stored(server.db_file, sid), out, errs)


def test_a_server_killed_mid_run_and_restarted_loses_no_line_and_stores_none_twice(tmp_path):
    with servers.gunicorn(tmp_path, auth=True) as first:
        runner, _ = tokens(first)
        proc = start_run(first.base, runner, tmp_path / "spool",
                         ["--lines", "400", "--pause", "0.004"], "--user", "alice")
        sid = session_id_from(proc)
        wait_for_rows(first.db_file, sid, 60, proc)
        servers.kill_hard(first)
        killed_at = len(stored(first.db_file, sid))
        time.sleep(1.0)  # the agent goes on printing; the runner retries and spools
        with servers.gunicorn_again(first):
            code, err = finish(proc)
    assert code == 3, err
    assert "retrying" in err
    out, errs = expected_rows(0, 400)
    check_each_line_once(stored(first.db_file, sid), out, errs)
    record("runner: server kill -9", lines=len(out) + len(errs), stored_at_kill=killed_at, lost=0,
           duplicates=0)


def test_a_runner_killed_mid_run_resumes_from_its_spool_with_no_loss_and_no_duplicate(server,
                                                                                      tmp_path):
    runner, user = tokens(server)
    pid_file = tmp_path / "agent.pid"
    proc = start_run(server.base, runner, tmp_path, ["--lines", "2000", "--pause", "0.002",
                                                     "--pid-file", str(pid_file)])
    sid = session_id_from(proc)
    wait_for_rows(server.db_file, sid, 80, proc)
    # Freeze the server so the batch in flight is spooled but never acknowledged, then
    # kill the runner: the resumed run must post it again, and the server keep it once.
    frozen = [server.master_pid, *servers.worker_pids(server.master_pid)]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(0.5)
        proc.kill()
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        proc.communicate()  # reaped, its pipes closed
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    state, _ = load(spool_path(tmp_path, sid))
    last_line = _last_agent_line(tmp_path, sid)

    again = start_run(server.base, runner, tmp_path, ["--lines", "2100", "--from",
                                                      str(last_line + 1)], "--session", sid)
    code, err = finish(again)
    assert code == 3, err
    out, _ = expected_rows(0, 2100)
    rows = stored(server.db_file, sid)
    assert sorted(seq for seq, _, _ in rows) == list(range(len(rows)))
    assert [p for _, s, p in sorted(rows) if s == "stdout"] == [d for _, d in out]
    assert state.unacked and f"resending {len(state.unacked)} spooled lines" in err
    # Usage too: one report per stored result line, however the crash fell between them.
    results = sum('"type": "result"' in p for _, s, p in rows if s == "stdout")
    _, counters = transcript(server.base, user, sid)
    assert results > 100 and counters["request_count"] == results
    record("runner: runner kill -9", spooled_at_kill=state.next_seq,
           unacked_at_kill=len(state.unacked), lost=0, duplicates=0)


def _last_agent_line(spool_dir, session_id):
    """The index of the last stdout line the killed runner spooled (its data names it); a
    torn last record is not a spooled line."""
    path = spool_path(spool_dir, session_id)
    _, good_bytes = load(path)
    records = [json.loads(raw) for raw in path.read_bytes()[:good_bytes].splitlines()]
    last = 0
    for item in records:
        if item.get("stream") == "stdout":
            data = json.loads(item["data"])
            last = int(data["uuid"][1:]) if "uuid" in data else 0
    return last


def test_an_unreachable_server_at_start_is_retried_until_it_answers(tmp_path):
    address = f"127.0.0.1:{servers.free_port()}"
    token_file = tmp_path / "token"
    # The server is not there yet: the runner must wait for it, then run the agent.
    db = tmp_path / "server"
    db.mkdir()
    with servers.gunicorn(db, auth=False, address=address) as warm:
        token_file.write_text("unused")  # auth off: any token passes
        servers.kill_hard(warm)
        time.sleep(0.3)
        started = time.monotonic()
        proc = start_run(warm.base, "unused", tmp_path / "spool", ["--lines", "30"])
        time.sleep(1.5)
        assert proc.poll() is None
        with servers.gunicorn_again(warm):
            code, err = finish(proc)
    assert code == 3, err
    assert "opening a session" in err and "retrying" in err
    out, errs = expected_rows(0, 30)
    check_each_line_once(stored(warm.db_file, session_id_of(err)), out, errs)
    record("runner: server absent at start", waited_s=round(time.monotonic() - started, 1))


def quick_refusal(proc):
    started = time.monotonic()
    code, err = finish(proc, timeout=30)
    return code, err, time.monotonic() - started


def test_a_line_over_the_servers_limit_ends_the_run_naming_the_line(tmp_path):
    with servers.gunicorn(tmp_path, auth=True,
                          env={"TURNLOG_MAX_LINE_LENGTH": "5000"}) as small:
        runner, _ = tokens(small)
        proc = start_run(small.base, runner, tmp_path / "spool",
                         ["--lines", "40", "--long-at", "21", "--long-size", "9000",
                          "--pause", "0.01"])
        code, err, seconds = quick_refusal(proc)
    assert code == RUNNER_FAILED, err
    assert "MAX_LINE_LENGTH" in err and "line seq" in err
    assert "retrying" not in err and seconds < 15


def test_a_batch_over_the_servers_body_limit_is_split_and_every_line_stored(tmp_path):
    # ~480-byte lines: a 100-line batch is ~50 KB, over this 16 KB body limit.
    with servers.gunicorn(tmp_path, auth=True,
                          env={"TURNLOG_MAX_CONTENT_LENGTH": "16384"}) as small:
        runner, _ = tokens(small)
        proc = start_run(small.base, runner, tmp_path / "spool", ["--lines", "300"])
        code, err = finish(proc)
        out, errs = expected_rows(0, 300)
        check_each_line_once(stored(small.db_file, session_id_of(err)), out, errs)
        refused = small.log.read_text("utf-8").count('/output HTTP/1.1" 413')
    assert code == 3, err
    assert refused > 0 and "retrying" not in err
    record("runner: 413 split", lines=len(out) + len(errs), refused_batches=refused)


def test_a_422_ends_the_run_naming_the_field(server, tmp_path):
    runner, _ = tokens(server)
    code, err, seconds = quick_refusal(start_run(server.base, runner, tmp_path, ["--lines", "5"],
                                                 "--user", "u" * 201))
    assert code == RUNNER_FAILED
    assert "422 validation_error" in err and "user_id" in err
    assert "retrying" not in err and seconds < 15


def test_a_revoked_token_ends_the_run_saying_which_token(server, tmp_path):
    runner = server.new_token("create-runner-token", "--machine", "revoked-m", "--any-user")
    listed = subprocess.run([TURNLOG, "list-tokens"], env=server.env, cwd=servers.ROOT,
                            capture_output=True, text=True, check=True).stdout
    token_id = next(row.split("\t")[0] for row in listed.splitlines()
                    if row.split("\t")[2:3] == ["revoked-m"])
    subprocess.run([TURNLOG, "revoke-token", token_id], env=server.env, cwd=servers.ROOT,
                   check=True, capture_output=True)
    code, err, seconds = quick_refusal(start_run(server.base, runner, tmp_path, ["--lines", "5"]))
    assert code == RUNNER_FAILED
    assert "refused the runner token" in err and "TURNLOG_TOKEN" in err
    assert "retrying" not in err and seconds < 15


def signalled_run(server, tmp_path, number):
    """A run of a printing agent sent signal `number` once 10 lines are stored:
    (session id, user token, exit code, stderr)."""
    runner, user = tokens(server)
    proc = start_run(server.base, runner, tmp_path, ["--lines", "1000", "--pause", "0.02"])
    sid = session_id_from(proc)
    wait_for_rows(server.db_file, sid, 10, proc)
    proc.send_signal(number)
    code, err = finish(proc, timeout=30)
    return sid, user, code, err


def test_sigterm_reaches_the_child_and_the_session_completes_with_its_code(server, tmp_path):
    sid, user, code, err = signalled_run(server, tmp_path, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err  # the child died of it, as a shell reports
    _, counters = transcript(server.base, user, sid)
    assert (counters["status"], counters["exit_code"]) == ("failed", 128 + signal.SIGTERM)
    rows = stored(server.db_file, sid)
    assert 10 <= len(rows) < 1000 and sorted(seq for seq, _, _ in rows) == list(range(len(rows)))


def test_ctrl_c_completes_the_session_and_says_which_how_and_where(server, tmp_path):
    sid, user, code, err = signalled_run(server, tmp_path, signal.SIGINT)
    assert code == 130, err  # the child died of the SIGINT forwarded to it
    # it returned silently before: nothing said what became of the session
    assert (f"turnlog: interrupted (SIGINT): session {sid} completed as failed (exit 130);"
            f" {server.base}/sessions/{sid}\n") in err, err
    _, counters = transcript(server.base, user, sid)
    assert (counters["status"], counters["exit_code"]) == ("failed", 130)
    assert not spool_path(tmp_path, sid).exists()


# Ignores SIGINT (a Ctrl-C reaches it through the runner, and it goes on), prints, sleeps.
IGNORES_SIGINT = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                  "print('ready', flush=True)\ntime.sleep(60)")


def test_a_second_ctrl_c_says_the_session_is_left_running(server, tmp_path):
    runner, user = tokens(server)
    proc = subprocess.Popen([TURNLOG, "run", "--server", server.base, "--token", runner,
                             "--spool", str(tmp_path), "--", sys.executable, "-c", IGNORES_SIGINT],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sid = session_id_from(proc)
    wait_for_rows(server.db_file, sid, 1, proc)
    proc.send_signal(signal.SIGINT)  # to the child, which ignores it
    time.sleep(0.5)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)  # the hard stop
    code, err = finish(proc, timeout=30)
    assert code == 130, err
    assert (f"turnlog: stopped by SIGINT (exit 130): session {sid} is left running (it reads"
            " `stale` until a run resumes it from the spool);"
            f" {server.base}/sessions/{sid}\n") in err, err
    assert f"turnlog run --session {sid} --spool {tmp_path}" in err
    _, counters = transcript(server.base, user, sid)
    assert counters["status"] in ("running", "stale") and counters["exit_code"] is None
    assert spool_path(tmp_path, sid).exists()
