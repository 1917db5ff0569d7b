"""Search the visible text of the transcripts a caller may read."""
import dataclasses
import re

from app.core.errors import InvalidCursor
from app.core.errors import InvalidQuery
from app.core.records import Page
from app.services.access import OPEN

# Words are runs of letters and digits: punctuation, quotes and operators in the
# query are separators, so no query can be a syntax error in the index's language.
WORD = re.compile(r"\w+")
MAX_WORDS = 16
MAX_MESSAGE_ID = 2**63 - 1
# A snippet is this many words around the first match, like the database's own.
SNIPPET_WORDS = 24
# Endings dropped before comparing a word of the text with a word of the query, a
# rough stand-in for the index's English stemming (the match itself is the index's).
ENDINGS = ("ing", "ed", "es", "s", "ly", "e")


def words_of(query):
    """The searchable words of a free-text query (at most MAX_WORDS)."""
    words = WORD.findall(query or "")
    if not words:
        raise InvalidQuery("the query needs at least one word", {"q": query})
    if len(words) > MAX_WORDS:
        raise InvalidQuery(f"at most {MAX_WORDS} words per query", {"words": len(words)})
    return words


def search_messages(query, uow, *, limit, before=None, caller=OPEN, budget_seconds=None):
    """Messages matching every word of `query` in sessions `caller` may read, newest first.

    `before` is the cursor of the previous page (the last message id seen). A query
    running past `budget_seconds` is stopped with SearchTimeout.
    """
    words = words_of(query)
    before_id = _cursor(before)
    with uow:
        hits = uow.search.find(words, limit, owner=caller.owner_scope, before=before_id,
                               budget_seconds=budget_seconds)
    hits = [_with_snippet(hit, words) for hit in hits]
    return Page(hits, str(hits[-1].id) if len(hits) == limit else None)


def _with_snippet(hit, words):
    if hit.head is None:
        return hit
    return dataclasses.replace(hit, snippet=head_snippet(hit.head, words), head=None)


def head_snippet(head, words):
    """SNIPPET_WORDS words of `head` around the first one matching a query word, each
    match marked **like this**, with … where text was left out. Without a match in
    `head` (it lies further on in the row), the first words."""
    tokens = head.split()
    stems = {_stem(word) for word in words}
    first = next((i for i, token in enumerate(tokens) if _matches(token, stems)), None)
    start = max(0, first - SNIPPET_WORDS // 4) if first is not None else 0
    shown = tokens[start:start + SNIPPET_WORDS]
    text = " ".join(f"**{token}**" if first is not None and _matches(token, stems) else token
                    for token in shown)
    return ("…" if start > 0 else "") + text + ("…" if start + SNIPPET_WORDS < len(tokens) else "")


def _matches(token, stems):
    return any(_stem(word) in stems for word in WORD.findall(token))


def _stem(word):
    word = word.lower()
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[:-len(ending)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # running -> runn -> run
    return word


def _cursor(before):
    if before in (None, ""):
        return None
    try:
        value = int(before)
    except ValueError:
        raise InvalidCursor("cursor must be a message id", {"before": before}) from None
    if not 0 < value <= MAX_MESSAGE_ID:
        raise InvalidCursor("cursor is out of range", {"before": before})
    return value
