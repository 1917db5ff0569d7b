"""MessageRepository counts only the rows it inserted (RETURNING), and keeps write order."""
import pytest

from app.extensions import db
from app.storage.repositories.messages import MessageRepository
from app.transcript.flush_policy import MessageDraft

NOW = "2025-01-01T00:00:00.000000Z"


@pytest.fixture
def conn(app, rows):
    """A connection in a transaction on the test's migrated database, with session s1."""
    rows("INSERT INTO agent_sessions (session_id, session_type, created_at, updated_at)"
         " VALUES ('s1', 'agent', ?, ?)", NOW, NOW)
    with db.engine.begin() as connection:
        yield connection


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


def test_a_stored_turn_key_is_known_in_its_session_only(conn):
    repo = MessageRepository(conn)
    repo.insert_new("s1", [draft("system:~abc")], NOW)
    assert repo.has_turn_key("s1", "system:~abc")
    assert not repo.has_turn_key("s1", "system:~abd")
    assert not repo.has_turn_key("s2", "system:~abc")
