"""A huge transcript row is stored, counted and searchable on both backends.

PostgreSQL cannot build a tsvector whose lexemes exceed 1 MB, so migration 0009
indexes only a prefix of each row there (docs/postgres.md); SQLite's FTS5 has no
such limit and indexes the whole row.
"""
from app.db import reading
from app.services import search
from tests import claude_lines as cl

WORDS = 170_000  # "w0000000 " is 9 characters: about 1.5 MB of distinct words


def test_a_huge_text_turn_is_stored_counted_and_found_by_its_first_words(
        backend, new_session, feed, complete, messages, counts):
    sid = new_session()
    content = " ".join(f"w{i:07d}" for i in range(WORDS))
    assert len(content) > 1_500_000

    receipt = feed(sid, [cl.assistant(cl.text(content)), cl.result()])
    complete(sid)

    assert receipt.messages_written == 1
    [row] = messages(sid)
    assert row["content"] == content
    assert counts(sid) == (1, 1)
    for word in ("w0000000", "w0001234"):
        hits = search.search_messages(word, reading(), limit=10).items
        assert [(h.id, h.session_id) for h in hits] == [(row["id"], sid)], word
        assert f"**{word}**" in hits[0].snippet
    # The last word lies past PostgreSQL's indexed prefix; SQLite indexes it all.
    last = search.search_messages(f"w{WORDS - 1:07d}", reading(), limit=10).items
    assert [h.id for h in last] == ([row["id"]] if backend == "sqlite" else [])
