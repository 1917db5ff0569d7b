"""A real gunicorn (two workers, gunicorn.conf.py's class) on loopback: concurrent runners, exact results."""
import runpy
import sqlite3
import threading
from contextlib import closing

import pytest

from tests import claude_lines as cl
from tests import servers
from tests.servers import call

ROOT = servers.ROOT
PRODUCERS, REQUESTS, CHUNKS = 4, 25, 8


def test_gunicorn_settings_use_their_own_prefix(monkeypatch):
    for name in ("BIND", "WORKERS", "THREADS", "LOG_LEVEL"):
        monkeypatch.delenv(f"GUNICORN_{name}", raising=False)
    monkeypatch.setenv("TURNLOG_BIND", "0.0.0.0:1")
    monkeypatch.setenv("TURNLOG_WORKERS", "9")
    defaults = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert (defaults["bind"], defaults["workers"]) == ("127.0.0.1:8000", 2)
    monkeypatch.setenv("GUNICORN_BIND", "127.0.0.1:9001")
    monkeypatch.setenv("GUNICORN_WORKERS", "3")
    monkeypatch.setenv("GUNICORN_THREADS", "5")
    monkeypatch.setenv("GUNICORN_LOG_LEVEL", "debug")
    settings = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert (settings["bind"], settings["workers"], settings["threads"], settings["loglevel"]) == (
        "127.0.0.1:9001", 3, 5, "debug")


@pytest.fixture
def server(tmp_path):
    with servers.gunicorn(tmp_path, workers=2, threads=4) as app:
        yield app.base, app.db_file


def test_concurrent_runners_through_gunicorn_lose_and_repeat_nothing(server):
    base, db_file = server
    status, body = call(base, "POST", "/api/remote/sessions", {"session_type": "agent"})
    assert status == 201
    sid = body["session"]["session_id"]
    errors = []

    def produce(producer):
        for request in range(REQUESTS):
            first = (producer * REQUESTS + request) * CHUNKS
            lines = [cl.assistant(cl.text(f"p{producer} r{request} c{c}")) for c in range(CHUNKS - 1)]
            lines.append(cl.result())
            chunks = [{"seq": first + i, "data": line} for i, line in enumerate(lines)]
            status, reply = call(base, "POST", f"/api/remote/sessions/{sid}/output",
                                 {"chunks": chunks})
            if status != 200 or reply["accepted"] != CHUNKS:
                errors.append((status, reply))

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []

    total = PRODUCERS * REQUESTS * CHUNKS
    with closing(sqlite3.connect(db_file)) as conn:
        indices = [r[0] for r in conn.execute(
            "SELECT event_index FROM remote_runtime_outputs WHERE session_id = ? "
            "ORDER BY event_index", (sid,))]
        seqs = {r[0] for r in conn.execute(
            "SELECT producer_seq FROM remote_runtime_outputs WHERE session_id = ?", (sid,))}
        rows = conn.execute("SELECT COUNT(*) FROM session_messages WHERE session_id = ?",
                            (sid,)).fetchone()[0]
    assert indices == list(range(total))
    assert seqs == set(range(total))
    status, body = call(base, "GET", f"/api/remote/sessions/{sid}")
    # each request carried one whole turn, and requests are serialised per session
    assert body["session"]["message_count"] == rows == PRODUCERS * REQUESTS
    assert all(m["content"].count("\n\n") == CHUNKS - 2 for m in body["session"]["messages"])
