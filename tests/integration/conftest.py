"""Integration helpers: drive the service layer on a real database, read it back with SQL
(`rows`, from tests/conftest.py)."""
import json

import pytest

from app import create_app
from app.core.records import Chunk
from app.db import reading
from app.db import writing
from app.extensions import db
from app.services import ingest
from app.services import sessions

RETENTION_SECONDS = 3600
# Session kinds by name: (session_type, context). Autonomy is derived, never stored.
KINDS = {
    "ordinary": ("agent", {}),
    "chat": ("chat", {}),
    "terminal": ("terminal", {}),
    "workflow_without_id": ("workflow", {}),
    "agent_with_workflow_id": ("agent", {"workflow_id": "wf-1"}),
    "autonomous": ("workflow", {"workflow_id": "wf-1"}),
}


@pytest.fixture
def new_session(app):
    """new_session(kind="ordinary") -> session_id, for a kind named in KINDS."""
    def create(kind="ordinary"):
        session_type, context = KINDS[kind]
        data = {"session_type": session_type, "context": dict(context)}
        return sessions.open_session(data, writing()).session_id
    return create


@pytest.fixture
def feed(app):
    """feed(sid, lines, stream="stdout", seq=None): ingest lines under increasing seqs.

    Seqs continue per session from the last call unless `seq` says where to start,
    so a test can replay lines under the same seqs or under new ones.
    """
    next_seq = {}

    def ingest_lines(session_id, lines, stream="stdout", seq=None):
        start = next_seq.get(session_id, 0) if seq is None else seq
        chunks = [Chunk(line, stream, start + i) for i, line in enumerate(lines)]
        next_seq[session_id] = max(next_seq.get(session_id, 0), start + len(lines))
        return ingest.ingest_output(session_id, chunks, writing(),
                                    retention_seconds=RETENTION_SECONDS)
    return ingest_lines


@pytest.fixture
def complete(app):
    """complete(sid, exit_code=0): the runner's POST complete."""
    def finish(session_id, exit_code=0):
        return ingest.complete_session(session_id, exit_code, writing())
    return finish


@pytest.fixture
def read_session(app):
    """read_session(sid): the session with its transcript, as GET builds it."""
    def read(session_id):
        return sessions.get_session(session_id, reading())
    return read


@pytest.fixture
def messages(rows):
    """messages(sid): the transcript rows as dicts, JSON columns decoded, in id order."""
    def select(session_id):
        found = rows("SELECT id, role, content, content_blocks, metadata, source, turn_key"
                     " FROM session_messages WHERE session_id = ? ORDER BY id", session_id)
        return [
            {"id": id_, "role": role, "content": content,
             "content_blocks": json.loads(blocks), "metadata": json.loads(metadata),
             "source": source, "turn_key": turn_key}
            for id_, role, content, blocks, metadata, source, turn_key in found
        ]
    return select


@pytest.fixture
def session_row(rows):
    """session_row(sid): the agent_sessions row as a dict."""
    def select(session_id):
        with_names = rows("SELECT message_count, request_count, total_tokens,"
                          " total_input_tokens, total_output_tokens, next_event_index, status,"
                          " exit_code FROM agent_sessions WHERE session_id = ?", session_id)
        names = ("message_count", "request_count", "total_tokens", "total_input_tokens",
                 "total_output_tokens", "next_event_index", "status", "exit_code")
        return dict(zip(names, with_names[0]))
    return select


@pytest.fixture
def outputs(rows):
    """outputs(sid): (event_index, stream, payload, producer_seq) of the buffer, in order."""
    def select(session_id):
        return rows("SELECT event_index, stream, payload, producer_seq FROM remote_runtime_outputs"
                    " WHERE session_id = ? ORDER BY event_index", session_id)
    return select


@pytest.fixture
def counts(rows, session_row):
    """counts(sid): (message_count, assistant/system rows stored); the two must agree."""
    def check(session_id):
        (stored,), = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?"
                          " AND role IN ('assistant', 'system')", session_id)
        return session_row(session_id)["message_count"], stored
    return check


@pytest.fixture
def restart(database_url):
    """restart(): a brand-new app on the same database, its app context pushed."""
    apps = []

    def start():
        db.engine.dispose()  # the old process's connections die with it
        fresh = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": database_url})
        context = fresh.app_context()
        context.push()
        apps.append(context)
        return fresh
    yield start
    for context in reversed(apps):
        db.engine.dispose()
        context.pop()
