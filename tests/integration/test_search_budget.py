"""Search does bounded work: snippets for the returned page only, from a bounded prefix
of each row, and every query under a time budget (issue: hostile tenant, item 1).

The rows are the ones a probe used: about 5 MB of text in which the searched word
occurs some 28,000 times. Before, a snippet of one such row took about 7 s on SQLite.
"""
import random

import pytest

from app.core.errors import SearchTimeout
from app.db import reading
from app.services import search
from app.storage.repositories.search import SNIPPET_PREFIX
from tests import claude_lines as cl

FILLER = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]


def big_text(seed, size=5_000_000):
    rng = random.Random(seed)
    words, length = [], 0
    while length < size:
        word = "needle" if rng.random() < 0.035 else rng.choice(FILLER)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


@pytest.fixture
def big_rows(new_session, feed):
    """Three sessions, each with one ~5 MB text turn full of `needle`."""
    sids = []
    for seed in range(3):
        sid = new_session()
        feed(sid, [cl.assistant(cl.text(big_text(seed))), cl.result()])
        sids.append(sid)
    return sids


def test_big_rows_answer_with_a_snippet_of_each_returned_row(big_rows, messages):
    newest = messages(big_rows[-1])[0]
    [hit] = search.search_messages("needle", reading(), limit=1, budget_seconds=30).items
    assert (hit.id, hit.session_id) == (newest["id"], big_rows[-1])
    assert "**needle**" in hit.snippet and hit.head is None
    assert len(hit.snippet) < 400

    hits = search.search_messages("needle", reading(), limit=10, budget_seconds=30).items
    assert [h.session_id for h in hits] == big_rows[::-1]
    assert all("**needle**" in h.snippet for h in hits)


def test_a_long_row_whose_match_lies_past_the_prefix_shows_its_first_words(backend, new_session, feed):
    sid = new_session()
    text = " ".join(["hay"] * (SNIPPET_PREFIX // 4 + 10)) + " needle"
    feed(sid, [cl.assistant(cl.text(text)), cl.result()])
    hits = search.search_messages("needle", reading(), limit=5).items
    if backend == "postgresql":  # PostgreSQL indexes the prefix only (docs/postgres.md)
        assert hits == []
        return
    [hit] = hits
    assert hit.snippet.startswith("hay hay") and hit.snippet.endswith("…")


def test_a_query_past_its_budget_is_stopped_with_search_timeout(big_rows, new_session, feed):
    sid = new_session()
    feed(sid, [line for i in range(1500) for line in (cl.assistant(cl.text(f"needle {i}")), cl.result())])
    with pytest.raises(SearchTimeout) as caught:
        search.search_messages("needle", reading(), limit=100, budget_seconds=1e-9)
    assert caught.value.code == "search_timeout"
    assert "budget" in caught.value.message
    # The connection is usable again at once, without the budget.
    hits = search.search_messages("needle", reading(), limit=100, budget_seconds=30).items
    assert len(hits) == 100 and hits[0].session_id == sid
