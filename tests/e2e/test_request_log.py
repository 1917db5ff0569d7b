"""Every response names its request id (X-Request-ID, the caller's when it is a safe
token), and the app's INFO lines (session opened, completed) carry that id."""
import logging
import re
import time
import urllib.request

import pytest

from app.request_log import AppLogHandler
from tests import servers

SESSIONS = "/api/remote/sessions"


def opened(client, **headers):
    response = client.post(SESSIONS, json={"session_type": "agent"}, headers=headers)
    assert response.status_code == 201, response.get_json()
    return response


def test_a_request_without_an_id_gets_a_fresh_one(client):
    first = opened(client).headers["X-Request-ID"]
    second = client.get("/no/such/path").headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", first) and re.fullmatch(r"[0-9a-f]{32}", second)
    assert first != second


def test_the_callers_id_is_echoed(client):
    assert opened(client, **{"X-Request-ID": "runner-7:42"}).headers["X-Request-ID"] == "runner-7:42"


@pytest.mark.parametrize("given", ["two words", "x" * 129, "tab\tinside", "é"])
def test_an_id_unfit_for_a_log_line_is_replaced(client, given):
    echoed = opened(client, **{"X-Request-ID": given}).headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", echoed)


def test_opening_and_completing_a_session_are_logged_at_info_with_the_request_id(client, caplog):
    caplog.set_level(logging.INFO, logger="app")
    sid = opened(client, **{"X-Request-ID": "open-1"}).get_json()["session"]["session_id"]
    done = client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 3},
                       headers={"X-Request-ID": "done-1"})
    assert done.status_code == 200
    lines = [(r.levelname, r.request_id, r.getMessage()) for r in caplog.records
             if r.name.startswith("app.services")]
    assert lines == [
        ("INFO", "open-1", f"session {sid} opened: agent, provider claude, owner None, machine None"),
        ("INFO", "done-1", f"session {sid} failed: exit code 3, 0 messages"),
    ]
    formatted = AppLogHandler().format(caplog.records[-1])
    assert f"INFO [done-1] app.services.ingest: session {sid} failed" in formatted


def test_a_repeated_complete_is_not_logged_again(client, caplog):
    sid = opened(client).get_json()["session"]["session_id"]
    caplog.set_level(logging.INFO, logger="app")
    client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 0})
    assert [r for r in caplog.records if "completed" in r.getMessage()] != []
    caplog.clear()
    client.post(f"{SESSIONS}/{sid}/complete", json={"exit_code": 0})
    assert [r for r in caplog.records if "completed" in r.getMessage()] == []


def test_the_app_logger_has_one_handler_however_many_apps_were_made(app):
    from app import create_app
    create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "x"})
    assert [type(h) for h in app.logger.handlers].count(AppLogHandler) == 1
    assert app.logger.level == logging.INFO


def test_gunicorns_access_line_carries_the_request_id(tmp_path):
    with servers.gunicorn(tmp_path) as server:
        request = urllib.request.Request(server.base + SESSIONS + "?limit=1",
                                         headers={"X-Request-ID": "trace-me-42"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.headers["X-Request-ID"] == "trace-me-42"
        deadline = time.monotonic() + 10
        while "rid=trace-me-42" not in server.log.read_text("utf-8") and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = [line for line in server.log.read_text("utf-8").splitlines() if "trace-me-42" in line]
    assert any(f'"GET {SESSIONS}?limit=1 HTTP/1.1" 200' in line and line.endswith("rid=trace-me-42")
               for line in lines), lines
