"""MessageRepository counts only the rows it inserted (RETURNING), and keeps write order."""
import pytest
from sqlalchemy import create_engine
from sqlalchemy import text

from app.storage import migrations
from app.storage.repositories.messages import MessageRepository
from app.transcript.flush_policy import MessageDraft

MIGRATIONS_DIR = migrations.Path(__file__).resolve().parents[2] / "migrations"
TABLES = ("0001_create_agent_sessions.sql", "0002_create_session_messages.sql")
NOW = "2025-01-01T00:00:00.000000Z"


@pytest.fixture
def conn():
    engine = create_engine("sqlite://")
    with engine.begin() as connection:
        for name in TABLES:
            sql = (MIGRATIONS_DIR / name).read_text("utf-8")
            for statement in migrations.split_statements(sql):
                connection.exec_driver_sql(statement)
        connection.execute(text(
            "INSERT INTO agent_sessions (session_id, session_type, created_at, updated_at)"
            " VALUES ('s1', 'agent', :now, :now)"), {"now": NOW})
        yield connection
    engine.dispose()


def draft(key, content="hi"):
    return MessageDraft("assistant", content, [], {}, key)


def test_counts_only_new_rows_in_write_order(conn):
    repo = MessageRepository(conn)
    assert len(repo.insert_new("s1", [draft("turn:a"), draft("turn:b")], NOW)) == 2
    assert len(repo.insert_new("s1", [draft("turn:b"), draft("turn:c"), draft("turn:c")], NOW)) == 1
    assert len(repo.insert_new("s1", [], NOW)) == 0
    keys = [m.turn_key for m in MessageRepository(conn).list_all("s1")]
    assert keys == ["turn:a", "turn:b", "turn:c"]


def test_a_replayed_turn_keeps_the_first_row(conn):
    repo = MessageRepository(conn)
    assert len(repo.insert_new("s1", [draft("turn:a", "first")], NOW)) == 1
    assert len(repo.insert_new("s1", [draft("turn:a", "second")], NOW)) == 0
    assert [m.content for m in repo.list_all("s1")] == ["first"]


def test_new_rows_come_back_with_their_ids(conn):
    repo = MessageRepository(conn)
    added = repo.insert_new("s1", [draft("turn:a"), draft("turn:b")], NOW)
    assert [(row_id, d.turn_key) for row_id, d in added] == [
        (m.id, m.turn_key) for m in repo.list_all("s1")]
