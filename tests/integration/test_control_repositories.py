"""The control channel's tables on a real database (migration 0024): commands come back
unacknowledged after a cursor and are acknowledged once; a permission request is
recorded once and resolved once, and the expiry sweep finds only those due."""
from app.db import writing
from app.storage.repositories.control.commands import CommandRepository
from app.storage.repositories.control.permissions import PermissionRepository


def test_commands_after_a_cursor_skip_the_acknowledged(app, new_session, rows):
    sid = new_session()
    with writing() as uow:
        first = uow.commands.add(sid, "input", {"input_id": 1, "content": "hi"}, "alice", "T1")
        second = uow.commands.add(sid, "interrupt", {}, "alice", "T2")
        uow.commit()
    assert second.command_id > first.command_id
    with writing() as uow:
        assert [c.kind for c in uow.commands.unacked_after(sid, 0)] == ["input", "interrupt"]
        assert uow.commands.unacked_after(sid, first.command_id) == [second]
        assert uow.commands.ack(sid, first.command_id, "done", None, "T3")
        assert not uow.commands.ack(sid, first.command_id, "failed", "late", "T4")
        uow.commit()
    with writing() as uow:
        assert uow.commands.unacked_after(sid, 0) == [second]
        assert uow.commands.find(sid, first.command_id).body == {"input_id": 1, "content": "hi"}
        assert uow.commands.latest(sid, "interrupt") == second
    assert rows("SELECT kind, outcome, reason, acked_at FROM session_commands"
                " WHERE session_id = ? ORDER BY command_id", sid) == [
        ("input", "done", None, "T3"), ("interrupt", None, None, None)]


def test_the_bell_poll_names_the_sessions_with_newer_commands(app, new_session):
    one, two, quiet = new_session(), new_session(), new_session()
    with writing() as uow:
        start, nobody = uow.commands.moved_after(None)
        uow.commands.add(quiet, "interrupt", {}, None, "T0")
        uow.commit()
    assert nobody == []
    with writing() as uow:
        before, _ = uow.commands.moved_after(None)
        uow.commands.add(one, "interrupt", {}, None, "T1")
        uow.commands.add(two, "stop", {}, None, "T2")
        newest = uow.commands.add(one, "interrupt", {}, None, "T3").command_id
        uow.commit()
    with writing() as uow:
        assert before > start
        found, moved = uow.commands.moved_after(before)
        assert (found, sorted(moved)) == (newest, sorted([one, two]))
        assert uow.commands.moved_after(newest) == (newest, [])


def test_a_permission_is_recorded_once_and_resolved_once(app, new_session, rows):
    sid = new_session()
    with writing() as uow:
        asked = uow.permissions.add_if_new(sid, "r1", "Bash", {"command": "ls"}, 7, "T1", "T9")
        assert uow.permissions.add_if_new(sid, "r1", "Bash", {"command": "rm"}, 8, "T2", None) is None
        uow.commit()
    assert asked.state == "pending" and asked.tool_input == {"command": "ls"}
    with writing() as uow:
        assert uow.permissions.list_pending(sid) == [asked]
        assert uow.permissions.resolve_if_pending(sid, "r1", "allowed", None, "alice", "T3")
        assert not uow.permissions.resolve_if_pending(sid, "r1", "denied", "no", "bob", "T4")
        uow.commit()
    assert rows("SELECT tool_input, event_index, state, resolved_by, resolved_at"
                " FROM session_permissions WHERE session_id = ?", sid) == [
        ('{"command": "ls"}', 7, "allowed", "alice", "T3")]


def test_the_expiry_sweep_finds_pending_requests_past_their_time(app, new_session):
    sid = new_session()
    with writing() as uow:
        uow.permissions.add_if_new(sid, "due", "Bash", {}, None, "2026-01-01T00:00:00Z",
                                   "2026-01-01T00:10:00Z")
        uow.permissions.add_if_new(sid, "later", "Bash", {}, None, "2026-01-01T00:00:00Z",
                                   "2026-01-01T01:00:00Z")
        uow.permissions.add_if_new(sid, "never", "Bash", {}, None, "2026-01-01T00:00:00Z", None)
        uow.commit()
    with writing() as uow:
        assert [p.request_id for p in uow.permissions.due("2026-01-01T00:30:00Z")] == ["due"]
        assert isinstance(uow.commands, CommandRepository)
        assert isinstance(uow.permissions, PermissionRepository)
