"""Who may read and write which session: the pure rules."""
from app.core.records import AgentSession
from app.services.access import OPEN
from app.services.access import Caller


def session(owner, machine):
    return AgentSession("s", owner, "agent", {}, "running", "claude", None, 0, 0, 0, 0, 0, 0,
                        "t", "t", machine=machine)


def test_a_runner_writes_its_machines_sessions_only_and_reads_none():
    runner = Caller("runner", "m1")
    assert runner.may_write(session("alice", "m1"))
    assert not runner.may_write(session("alice", "m2"))
    assert not runner.may_write(session("alice", None))
    assert not runner.may_read(session("alice", "m1"))


def test_a_user_reads_their_own_sessions_and_writes_none():
    alice = Caller("user", "alice")
    assert alice.may_read(session("alice", "m1"))
    assert not alice.may_read(session("bob", "m1"))
    assert not alice.may_read(session(None, "m1"))
    assert not alice.may_write(session("alice", "alice"))
    assert alice.owner_scope == "alice"


def test_an_admin_reads_everything_but_writes_nothing():
    admin = Caller("user", "root", is_admin=True)
    assert admin.may_read(session("bob", None)) and admin.owner_scope is None
    assert not admin.may_write(session("bob", "root"))


def test_a_runner_named_like_an_admin_user_gains_nothing():
    runner = Caller("runner", "root", is_admin=True)
    assert not runner.sees_everything
    assert not runner.may_read(session("bob", None))


def test_the_open_caller_of_a_demo_may_do_anything():
    assert OPEN.may_read(session("bob", None)) and OPEN.may_write(session("bob", None))
    assert OPEN.owner_scope is None


def test_a_scoped_runner_writes_only_its_users_sessions_on_its_machine():
    runner = Caller("runner", "m1", users=("alice", "carol"))
    assert runner.may_write(session("alice", "m1"))
    assert runner.may_write(session("carol", "m1"))
    assert not runner.may_write(session("bob", "m1"))
    assert not runner.may_write(session(None, "m1"))
    assert not runner.may_write(session("alice", "m2"))
    assert runner.may_serve("alice") and not runner.may_serve("bob")


def test_a_session_token_writes_its_own_session_only():
    own = Caller("runner", "m1", users=("alice",), session_id="s")
    assert own.may_write(session("alice", "m1"))
    other = AgentSession("s2", "alice", "agent", {}, "running", "claude", None, 0, 0, 0, 0, 0, 0,
                         "t", "t", machine="m1")
    assert not own.may_write(other)
    assert not own.may_read(session("alice", "m1"))
