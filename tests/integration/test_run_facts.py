"""What a session records of its run (migration 0026): the command line with secrets
redacted, the first prompt, and for a failed session its reason and last stderr lines;
and the `stale` a silent runner's session is shown with. Rows read back with SQL."""
import json
from datetime import timedelta

from app.core.clock import from_iso
from app.db import reading
from app.db import writing
from app.services import ingest
from app.services import sessions

SECRET = "sk-ant-" + "x" * 24


def open_run(command=None, prompt=None):
    data = {"session_type": "agent", "context": {}, "command": command, "prompt": prompt}
    return sessions.open_session(data, writing()).session_id


def facts(rows, sid):
    (row,) = rows("SELECT command, first_prompt, failure_reason, stderr_tail, status, exit_code"
                  " FROM agent_sessions WHERE session_id = ?", sid)
    command, prompt, reason, tail, status, code = row
    return {"command": json.loads(command) if command else None, "prompt": prompt,
            "reason": reason, "stderr_tail": json.loads(tail) if tail else None,
            "status": status, "exit_code": code}


def test_the_command_is_stored_redacted_and_the_prompt_as_given(app, rows):
    sid = open_run(["claude", "-p", "fix the pager", "--api-key", SECRET, "--token=abc"],
                   "fix the pager")

    stored = facts(rows, sid)
    assert stored["command"] == ["claude", "-p", "fix the pager", "--api-key", "[redacted]",
                                 "--token=[redacted]"]
    assert stored["prompt"] == "fix the pager"
    assert SECRET not in json.dumps(rows("SELECT * FROM agent_sessions WHERE session_id = ?", sid))


def test_a_session_opened_without_them_records_nulls(app, rows):
    sid = open_run()
    assert facts(rows, sid) | {"status": None} == {
        "command": None, "prompt": None, "reason": None, "stderr_tail": None, "status": None,
        "exit_code": None}


def test_a_failed_session_keeps_its_last_stderr_lines(app, rows, feed):
    sid = open_run(["agent"])
    feed(sid, [f"warning {n}" for n in range(25)], stream="stderr")
    feed(sid, ['{"type":"noise"}'], stream="stdout")
    feed(sid, ["Error: bad key " + "!" * 1200], stream="stderr")

    ingest.complete_session(sid, 3, writing())

    stored = facts(rows, sid)
    assert (stored["status"], stored["exit_code"]) == ("failed", 3)
    tail = stored["stderr_tail"]
    assert len(tail) == ingest.STDERR_TAIL_LINES
    assert tail[0] == "warning 6" and tail[-2] == "warning 24"
    assert tail[-1].startswith("Error: bad key") and len(tail[-1]) == ingest.STDERR_LINE_CHARS
    assert sessions.get_session(sid, reading()).stderr_tail == tail


def test_a_completed_session_keeps_no_stderr_and_no_reason(app, rows, feed):
    sid = open_run(["agent"])
    feed(sid, ["just a warning"], stream="stderr")
    ingest.complete_session(sid, 0, writing(), reason="ignored on success")
    stored = facts(rows, sid)
    assert (stored["status"], stored["stderr_tail"], stored["reason"]) == ("completed", None, None)


def test_an_agent_that_never_started_keeps_the_reason(app, rows):
    sid = open_run(["no-such-agent"])
    ingest.complete_session(sid, 127, writing(), reason="cannot start 'no-such-agent'")
    stored = facts(rows, sid)
    assert (stored["status"], stored["exit_code"], stored["reason"], stored["stderr_tail"]) == \
        ("failed", 127, "cannot start 'no-such-agent'", None)


def test_a_silent_running_session_reads_stale_and_a_heartbeat_makes_it_live(app, rows):
    sid = open_run(["agent"])
    (updated,), = rows("SELECT updated_at FROM agent_sessions WHERE session_id = ?", sid)
    later = from_iso(updated) + timedelta(seconds=121)

    def stale():
        found = sessions.get_session_summary(sid, reading())
        return sessions.mark_stale([found], stale_seconds=120, clock=lambda: later)[0].stale

    assert stale()
    rows("UPDATE agent_sessions SET runner_seen_at = ? WHERE session_id = ?",
         (later - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), sid)
    assert not stale()
    ingest.complete_session(sid, 0, writing())
    rows("UPDATE agent_sessions SET runner_seen_at = NULL WHERE session_id = ?", sid)
    assert not stale()  # a completed session is never stale


def test_the_stderr_index_is_partial(app, rows, backend):
    """The last stderr lines are found through ix_outputs_stderr (SQLite's plan says so)."""
    if backend != "sqlite":
        (found,), = rows("SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'ix_outputs_stderr'")
        assert found == 1
        return
    plan = rows("EXPLAIN QUERY PLAN SELECT payload FROM remote_runtime_outputs"
                " WHERE session_id = 's' AND stream = 'stderr' ORDER BY event_index DESC LIMIT 20")
    assert any("ix_outputs_stderr" in str(step) for step in plan)
