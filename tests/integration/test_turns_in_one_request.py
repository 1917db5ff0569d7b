"""Turns closed by one request are written by one statement, still in write order."""
from app.db import writing
from app.transcript.flush_policy import MessageDraft
from tests import claude_lines as cl


def test_turns_closed_by_one_request_get_ids_in_the_order_they_closed(new_session, feed, rows,
                                                                     counts):
    sid = new_session("ordinary")
    lines = []
    for n in range(5):
        lines += [cl.assistant(cl.text(f"turn {n}")), cl.result()]

    receipt = feed(sid, lines)

    stored = rows("SELECT id, content FROM session_messages WHERE session_id = ? ORDER BY id", sid)
    assert [content for _, content in stored] == [f"turn {n}" for n in range(5)]
    assert receipt.messages_written == 5 and counts(sid) == (5, 5)


def test_a_request_that_repeats_a_stored_turn_writes_only_the_new_ones(new_session, feed, rows,
                                                                      counts):
    sid = new_session("ordinary")
    first = [cl.assistant(cl.text("one"), uuid="u-1"), cl.result(uuid="r-1")]
    feed(sid, first)

    receipt = feed(sid, first + [cl.assistant(cl.text("two"), uuid="u-2"), cl.result(uuid="r-2")])

    stored = rows("SELECT content FROM session_messages WHERE session_id = ? ORDER BY id", sid)
    assert stored == [("one",), ("two",)]
    assert receipt.messages_written == 1 and counts(sid) == (2, 2)


def test_insert_new_skips_stored_keys_and_keys_repeated_within_the_drafts(new_session, rows):
    sid = new_session("ordinary")
    stamp = "2026-01-01T00:00:00.000000Z"

    def draft(key, content):
        return MessageDraft("assistant", content, [], {}, key)

    with writing() as uow:
        [(first_id, _)] = uow.messages.insert_new(sid, [draft("k1", "one")], stamp)
        added = uow.messages.insert_new(
            sid, [draft("k2", "two"), draft("k1", "again"), draft("k3", "three"),
                  draft("k2", "twice")], stamp)
        uow.commit()

    assert [(d.turn_key, d.content) for _, d in added] == [("k2", "two"), ("k3", "three")]
    ids = [row_id for row_id, _ in added]
    assert first_id < ids[0] < ids[1]
    stored = rows("SELECT id, turn_key, content FROM session_messages WHERE session_id = ?"
                  " ORDER BY id", sid)
    assert stored == [(first_id, "k1", "one"), (ids[0], "k2", "two"), (ids[1], "k3", "three")]
