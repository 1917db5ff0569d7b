"""Search the visible text of the transcripts a caller may read."""
import re

from app.services.access import OPEN
from app.services.errors import InvalidCursor
from app.services.errors import InvalidQuery
from app.services.models import Page

# Words are runs of letters and digits: punctuation, quotes and operators in the
# query are separators, so no query can be a syntax error in the index's language.
WORD = re.compile(r"\w+")
MAX_WORDS = 16
MAX_MESSAGE_ID = 2**63 - 1


def words_of(query):
    """The searchable words of a free-text query (at most MAX_WORDS)."""
    words = WORD.findall(query or "")
    if not words:
        raise InvalidQuery("the query needs at least one word", {"q": query})
    if len(words) > MAX_WORDS:
        raise InvalidQuery(f"at most {MAX_WORDS} words per query", {"words": len(words)})
    return words


def search_messages(query, uow, *, limit, before=None, caller=OPEN):
    """Messages matching every word of `query` in sessions `caller` may read, newest first.

    `before` is the cursor of the previous page (the last message id seen).
    """
    words = words_of(query)
    before_id = _cursor(before)
    with uow:
        hits = uow.search.find(words, limit, owner=caller.owner_scope, before=before_id)
    return Page(hits, str(hits[-1].id) if len(hits) == limit else None)


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
