"""The control use cases on a real database, rows checked with SQL: a resolution's
announcement line goes through ingest's fold without disturbing the open turn (every
provider); racing answers and an expiry resolve a request once, with one command; the
command stream reads once per wake-up."""
import json
import threading

import pytest
from sqlalchemy import event

from app.core.errors import AlreadyResolved
from app.db import detached_units_of_work
from app.db import writing
from app.extensions import db
from app.services import commands
from app.services import control
from app.services import sessions
from tests import claude_lines as cl

PAST = "2000-01-01T00:00:00.000000Z"
FUTURE = "2999-01-01T00:00:00.000000Z"


def open_session(provider):
    data = {"session_type": "agent", "context": {}, "provider": provider}
    return sessions.open_session(data, writing()).session_id


def ask(rows, sid, request_id="R1", expires_at=FUTURE):
    rows("INSERT INTO session_permissions (session_id, request_id, tool_name, tool_input,"
         " requested_at, expires_at, state) VALUES (?, ?, 'Bash', '{}', ?, ?, 'pending')",
         sid, request_id, PAST, expires_at)


def test_a_resolution_mid_turn_leaves_the_claude_transcript_as_it_would_be(app, rows, feed, messages):
    plain, driven = open_session("claude"), open_session("claude")
    for sid in (plain, driven):
        feed(sid, [cl.assistant(cl.text("Looking."), cl.tool_use("toolu_1"))])
    ask(rows, driven)
    control.answer_permission(driven, "R1", "allow", None, writing())
    for sid in (plain, driven):
        feed(sid, [cl.tool_result("toolu_1"), cl.assistant(cl.text("Done.")), cl.result()])
    strip = [(m["role"], m["content"]) for m in messages(plain)]
    assert [(m["role"], m["content"]) for m in messages(driven)] == strip
    assert rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", driven) == \
        rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", plain)
    [(payload, seq)] = rows("SELECT payload, producer_seq FROM remote_runtime_outputs"
                            " WHERE session_id = ? AND event_index = 1", driven)
    assert json.loads(payload)["type"] == "turnlog.permission_resolved" and seq is None
    assert rows("SELECT next_event_index FROM agent_sessions WHERE session_id = ?", driven) == [(5,)]


@pytest.mark.parametrize("provider", ["codex", "gemini"])
def test_the_announcement_line_is_taken_by_every_provider(app, rows, provider):
    sid = open_session(provider)
    ask(rows, sid)
    permission, command = control.answer_permission(sid, "R1", "deny", "no", writing())
    assert (permission.state, command.body["behavior"]) == ("denied", "deny")
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?", sid) == [(1,)]
    assert rows("SELECT message_count FROM agent_sessions WHERE session_id = ?", sid) == [(0,)]


def test_racing_answers_resolve_once_with_one_command(app, rows):
    sid = open_session("claude")
    ask(rows, sid)
    outcomes, barrier = [], threading.Barrier(4)

    def answer(behavior):
        with app.app_context():
            barrier.wait(10)
            try:
                control.answer_permission(sid, "R1", behavior, None, writing())
                outcomes.append(behavior)
            except AlreadyResolved as err:
                outcomes.append(err.details["permission"]["state"])
            finally:
                db.session.remove()

    threads = [threading.Thread(target=answer, args=(b,)) for b in ("allow", "deny") * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    [(state,)] = rows("SELECT state FROM session_permissions")
    winner = "allow" if state == "allowed" else "deny"
    assert sorted(outcomes) == sorted([winner] + [state] * 3)
    assert rows("SELECT COUNT(*) FROM session_commands WHERE kind = 'permission'") == [(1,)]
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs") == [(1,)]


def test_an_expiry_and_an_answer_resolve_once(app, rows):
    sid = open_session("claude")
    ask(rows, sid, expires_at=PAST)
    with pytest.raises(AlreadyResolved) as err:
        control.answer_permission(sid, "R1", "allow", None, writing())
    assert err.value.details["permission"]["state"] == "expired"
    assert control.expire_due(sid, lambda write=False: writing()) == 0  # nothing due now
    assert rows("SELECT state, resolved_by FROM session_permissions") == [("expired", None)]
    assert rows("SELECT kind, body FROM session_commands") == [
        ("permission", json.dumps({"request_id": "R1", "behavior": "deny",
                                   "message": control.EXPIRED_MESSAGE, "state": "expired"}))]


def test_a_completed_session_gets_no_announcement_line(app, rows, complete):
    sid = open_session("claude")
    ask(rows, sid)
    complete(sid)
    control.answer_permission(sid, "R1", "allow", None, writing())
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?", sid) == [(0,)]
    assert rows("SELECT COUNT(*) FROM session_commands") == [(1,)]


class CountingBell:
    """A bell whose waits return at once, counted."""

    def __init__(self):
        self.waits = 0

    def mark(self, session_id):
        return 0

    def wait(self, session_id, mark, timeout):
        self.waits += 1
        return True


def test_the_command_stream_reads_once_per_wake_up_with_its_expiry_check(app, rows):
    sid = open_session("claude")
    ask(rows, sid, "R1", expires_at=FUTURE)
    opened = []
    new_uow = detached_units_of_work()

    def counted(write=False):
        opened.append(write)
        return new_uow(write)

    bell = CountingBell()
    channel = commands.Channel(poll_seconds=1.0, heartbeat_seconds=3600.0)
    stream = commands.follow_commands(sid, 0, counted, bell, channel)
    with writing() as uow:
        uow.commands.add(sid, "interrupt", {}, None, PAST)
        uow.commit()
    first = next(stream)
    # one read (commands, session and due permissions together) and the first heartbeat
    assert [c.kind for c in first.commands] == ["interrupt"] and opened == [False, True]
    with writing() as uow:
        uow.commands.add(sid, "stop", {}, None, PAST)
        uow.commit()
    second = next(stream)
    # fewer than a batch came: the stream waited on the bell before it read again
    assert [c.kind for c in second.commands] == ["stop"]
    assert bell.waits == 1 and opened == [False, True, False]
    stream.close()


def test_a_stream_writes_no_heartbeat_an_ack_has_just_written(app, rows):
    """An ack refreshes runner_seen_at; the stream reads it with its commands and writes
    its own heartbeat only once that is `heartbeat_seconds` old (100 driven runners
    each wrote one every 5 s beside their acks, write transactions ingest waited for)."""
    sid = open_session("claude")
    with writing() as uow:
        command = uow.commands.add(sid, "interrupt", {}, None, PAST)
        uow.commit()
    commands.ack_command(sid, command.command_id, "done", None, writing())
    opened = []
    new_uow = detached_units_of_work()

    def counted(write=False):
        opened.append(write)
        return new_uow(write)

    channel = commands.Channel(poll_seconds=1.0, heartbeat_seconds=3600.0)
    stream = commands.follow_commands(sid, 0, counted, CountingBell(), channel)
    with writing() as uow:
        uow.commands.add(sid, "stop", {}, None, PAST)
        uow.commit()
    assert [c.kind for c in next(stream).commands] == ["stop"]
    assert opened == [False]  # the read; the ack's heartbeat stands
    stream.close()
    stale = commands.Channel(poll_seconds=1.0, heartbeat_seconds=0.0)
    opened.clear()
    again = commands.follow_commands(sid, 0, counted, CountingBell(), stale)
    next(again)
    assert opened == [False, True]  # older than heartbeat_seconds: written
    again.close()


@pytest.mark.sqlite_only
def test_an_ack_writes_the_session_row_before_the_command_and_the_input(app):
    """Ingest applying an input's echo locks the session row, then the input's; an ack
    in the other order deadlocked on PostgreSQL (bench/inputs.py). SQLite's trace shows
    the order of the writes."""
    sid = open_session("claude")
    with writing() as uow:
        added = uow.inputs.add_if_new(sid, "c1", "hi", None, PAST)
        command = uow.commands.add(sid, "input", {"input_id": added.input_id}, None, PAST)
        uow.commit()
    seen = []

    def trace(dbapi_conn, record, proxy):
        dbapi_conn.set_trace_callback(seen.append)

    db.engine.dispose()
    event.listen(db.engine, "checkout", trace)
    try:
        commands.ack_command(sid, command.command_id, "done", None, writing())
    finally:
        event.remove(db.engine, "checkout", trace)
    writes = [s.split()[1] for s in seen if s.lstrip().upper().startswith("UPDATE")]
    assert writes == ["agent_sessions", "session_commands", "session_inputs"]
