"""A command queued through one app instance reaches a runner waiting on another: on
PostgreSQL through the NOTIFY of migration 0025 at once (the waiter's read interval is
made far longer than the test waits), anywhere through that read interval. Two apps
in one process, each with its own engine and command bell, stand for two instances."""
import threading
import time

import pytest

from app import create_app
from app.extensions import db
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


def run_fan_out(app, poll_seconds):
    """(seconds from the POST on one instance to the long poll's answer on the other, body)."""
    waiter_app = second_app(app, COMMAND_POLL_SECONDS=poll_seconds)
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
