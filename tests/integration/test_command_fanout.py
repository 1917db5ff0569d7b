"""A command queued through one app instance reaches a runner waiting on another: on
PostgreSQL through the NOTIFY of migration 0025 at once (the waiter's read interval is
made far longer than the test waits), on SQLite through the bell's poll of the newest
commands (COMMAND_WATCH_SECONDS), anywhere through that read interval. Two apps
in one process, each with its own engine and command bell, stand for two instances."""
import threading
import time

import pytest

from app import create_app
from app import db as db_module
from app.control import channel
from app.extensions import db
from app.services.commands import CommandBell
from app.storage import live_notify

SESSIONS = "/api/remote/sessions"


def second_app(app, **settings):
    """Another instance of the app on the same database, with its own engine and bell."""
    config = {key: app.config[key] for key in ("SQLALCHEMY_DATABASE_URI", "SECRET_KEY")}
    return create_app({"TESTING": True, "AUTH_DISABLED": True, **config, **settings})


def wait_for_command(waiter_app, sid, got):
    with waiter_app.test_client() as client:
        response = client.get(f"{SESSIONS}/{sid}/commands?wait=20")
        got["at"] = time.monotonic()
        got["body"] = response.get_json()


def run_fan_out(app, poll_seconds, **settings):
    """(seconds from the POST on one instance to the long poll's answer on the other, body)."""
    waiter_app = second_app(app, COMMAND_POLL_SECONDS=poll_seconds, **settings)
    sid = app.test_client().post(SESSIONS, json={"session_type": "agent"}).get_json()["session"]["session_id"]
    got = {}
    waiter = threading.Thread(target=wait_for_command, args=(waiter_app, sid, got))
    waiter.start()
    try:
        time.sleep(1.0)  # the long poll is waiting, and its bell listening
        posted = time.monotonic()
        sent = app.test_client().post(f"{SESSIONS}/{sid}/interrupt")
        assert sent.status_code == 202
        waiter.join(30)
    finally:
        with waiter_app.app_context():
            db.engine.dispose()
    return got["at"] - posted, got["body"]


def test_postgresql_notifies_the_waiting_runner_of_another_instance(app, backend):
    if backend != "postgresql":
        pytest.skip("PostgreSQL only (set TURNLOG_TEST_POSTGRES_URL)")
    with app.app_context():
        assert live_notify.supported(db.engine)
    # the waiter reads again only after 20 s: only the notification can wake it sooner
    seconds, body = run_fan_out(app, poll_seconds=20)
    assert [c["kind"] for c in body["commands"]] == ["interrupt"]
    assert seconds < 5  # loose: it takes milliseconds


def test_without_a_notification_the_read_interval_brings_it(app):
    seconds, body = run_fan_out(app, poll_seconds=0.1)
    assert [c["kind"] for c in body["commands"]] == ["interrupt"]
    assert seconds < 5  # loose: about one read interval


def test_a_command_queued_while_the_listener_connects_is_not_left_to_the_poll(app, backend):
    """The bell's listener starts with the first waiter, and its LISTEN takes a moment: a
    command committed meanwhile notifies no one. Once listening, the bell wakes the
    waiter to read again (here the listener connects 0.5 s late; the poll is 20 s)."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL only (set TURNLOG_TEST_POSTGRES_URL)")
    waiter_app = second_app(app, COMMAND_POLL_SECONDS=20)
    with waiter_app.app_context():
        listen = db_module.notification_listener(live_notify.COMMANDS_CHANNEL)

    def slow_listen(on_notify, stop, on_listening=None):
        time.sleep(0.5)
        listen(on_notify, stop, on_listening=on_listening)

    bell = CommandBell(listen=slow_listen)
    waiter_app.extensions[channel.BELL_KEY] = bell
    sid = app.test_client().post(SESSIONS, json={"session_type": "agent"}).get_json()["session"]["session_id"]
    got = {}
    waiter = threading.Thread(target=wait_for_command, args=(waiter_app, sid, got))
    waiter.start()
    try:
        deadline = time.monotonic() + 10
        while bell.waiting(sid) == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        posted = time.monotonic()  # the waiter waits; its listener is not listening yet
        assert app.test_client().post(f"{SESSIONS}/{sid}/interrupt").status_code == 202
        waiter.join(30)
    finally:
        with waiter_app.app_context():
            db.engine.dispose()
    assert [c["kind"] for c in got["body"]["commands"]] == ["interrupt"]
    assert got["at"] - posted < 5  # about the listener's 0.5 s, not the 20 s poll
def test_on_sqlite_the_bell_polls_for_the_commands_of_other_processes(app, backend):
    if backend != "sqlite":
        pytest.skip("SQLite only: PostgreSQL notifies")
    # the waiter reads again only after 20 s: only the bell's poll can wake it sooner
    seconds, body = run_fan_out(app, poll_seconds=20, COMMAND_WATCH_SECONDS=0.05)
    assert [c["kind"] for c in body["commands"]] == ["interrupt"]
    assert seconds < 5  # loose: about one poll of the bell
