"""The evidence record: read a session's shell commands page by page, and backfill it
from the retained output buffer when the evidence table is first created; and the tool
results of a page of messages (session_tool_results): those of its rows, and the turns
without a row that sit among them."""
from dataclasses import replace

from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import InvalidCursor
from app.core.records import Page
from app.core.records import PageTools
from app.core.records import ToolTurn
from app.core.records import fitting
from app.providers import get_parser
from app.services.access import OPEN
from app.services.sessions import MAX_MESSAGE_ID
from app.services.sessions import list_messages
from app.services.sessions import readable_session
from app.transcript.open_turn import OpenTurn

BACKFILL_PAGE = 1000  # buffer rows read at a time, so a long session is never held whole
# Tool results a page of messages carries at most, of its rows and of the turns among
# them each; past it the page says `tool_results_truncated`.
TOOL_RESULTS_PER_PAGE = 2000


def list_evidence(session_id, uow, *, after=None, limit, caller=OPEN, max_bytes=0):
    """One keyset page of the session's evidence, in the order its commands ran, of at
    most `limit` items and (with `max_bytes`) no more than fit in that many bytes of
    text, the first always; the cursor is the last item's id. Readable by whoever may
    read the session. (An item holds at most about 16 KiB: its command and output are
    cut to 8 KiB each, so the rows read past the budget are few and small.)"""
    after_id = _cursor(after)
    with uow:
        readable_session(uow, session_id, caller)
        items = uow.evidence.list_page(session_id, after_id, limit)
    kept = fitting([_text_size(item) for item in items], max_bytes)
    cut = kept < len(items)
    items = items[:kept]
    return Page(items, str(items[-1].id) if items and (cut or len(items) == limit) else None)


def _text_size(item):
    return len(item.command) + len(item.output_head) + len(item.output_tail)


def evidence_with_rows(session_id, uow, *, limit, caller=OPEN):
    """(the first `limit` evidence items, {turn id: id of the row that turn wrote}, whether
    more items follow): what the viewer's panel shows, read in one transaction."""
    with uow:
        readable_session(uow, session_id, caller)
        items = uow.evidence.list_page(session_id, 0, limit + 1)
        rows = uow.messages.ids_of_turns(session_id, {item.turn_id for item in items[:limit]})
    return items[:limit], rows, len(items) > limit


def list_messages_with_tools(session_id, uow, *, after=None, limit, caller=OPEN, max_bytes=0):
    """One page of the transcript (sessions.list_messages) and its PageTools: the results
    of its rows, and the turns without a row placed from `after` up to its last message
    (on its last page, after it too). Two reads; a turn closed between them is placed
    after the page's last row at most, so none is shown out of its place."""
    page = list_messages(session_id, uow, after=after, limit=limit, caller=caller,
                         max_bytes=max_bytes)
    if not page.items:
        before = None
    else:
        before = page.items[-1].id + (0 if page.next_cursor else 1)
    return page, tools_of_messages(session_id, uow, page.items, after=int(after or 0),
                                   before=before, caller=caller, max_bytes=max_bytes)


def tools_of_messages(session_id, uow, messages, *, after, before, caller=OPEN, max_bytes=0):
    """The PageTools of `messages` (a page read before): the results of those rows, and
    the turns without a row placed in [after, before) (`before` None: to the end)."""
    with uow:
        readable_session(uow, session_id, caller)
        return _page_tools(uow, session_id, messages, after,
                           MAX_MESSAGE_ID if before is None else before, max_bytes)


def _page_tools(uow, session_id, messages, after, before, max_bytes):
    """PageTools (inside the caller's transaction). The outputs count against
    `max_bytes` in transcript order; past it a result keeps its call, not its output
    (`output_omitted`), so no call disappears from a page."""
    ids = [m.id for m in messages]
    own = uow.tool_results.of_messages(session_id, min(ids), max(ids), TOOL_RESULTS_PER_PAGE + 1) \
        if ids else []
    loose = uow.tool_results.without_row(session_id, after, before, TOOL_RESULTS_PER_PAGE + 1)
    cut = len(own) > TOOL_RESULTS_PER_PAGE or len(loose) > TOOL_RESULTS_PER_PAGE
    own, loose = own[:TOOL_RESULTS_PER_PAGE], loose[:TOOL_RESULTS_PER_PAGE]
    # transcript order: by the message each sits at (a loose one after its message)
    ordered = sorted([*own, *loose], key=lambda r: (r.after_message_id, r.message_id is None, r.id))
    kept = _fitting_outputs(ordered, max_bytes)
    shown = {r.id: r if n < kept else replace(r, output="", output_omitted=True)
             for n, r in enumerate(ordered)}
    by_message, turns = {}, {}
    for result in own:
        by_message.setdefault(result.message_id, []).append(shown[result.id])
    for result in loose:
        turn = turns.get(result.turn_id)
        if turn is None:
            turn = turns[result.turn_id] = ToolTurn(result.turn_id, result.after_message_id,
                                                    result.created_at, [])
        turn.tool_results.append(shown[result.id])
    return PageTools(by_message, list(turns.values()), cut)


def _fitting_outputs(results, max_bytes):
    """How many of `results`, in order, keep their output within `max_bytes` (0: all)."""
    total = 0
    for count, result in enumerate(results):
        total += len(result.output)
        if max_bytes and total > max_bytes:
            return count
    return len(results)


def backfill(uow, *, clock=utc_now):
    """Evidence for every turn the retained buffer still holds whole; returns how many
    items were stored. Run inside the caller's transaction (the migration's): it
    neither begins nor commits.

    Each session's stdout lines are read again with its provider's parser into a fresh
    open turn that reads shell commands only (OpenTurn.for_evidence): a turn comes out
    under the same key it was stored with as long as the buffer holds all its lines, and
    a turn whose first lines were pruned comes out under another key, which names no
    stored turn and is skipped. A completed session's last turn is closed as its
    completion closed it; a running session's open turn gets its evidence from ingest,
    when it closes.
    """
    stamp, added = to_iso(clock()), 0
    for session_id, provider, status in uow.outputs.buffered_sessions():
        parse_line = get_parser(provider)
        # Two readings: lines without an id of their own were named by their buffer index
        # before migration 0019's release and by their content since (replay.py), so a
        # turn's stored key is the one of either; _store_known keeps what matches.
        readings = [(OpenTurn.for_evidence(), by_content) for by_content in (True, False)]
        after = -1
        while rows := uow.outputs.list_lines_after(session_id, after, BACKFILL_PAGE):
            items = []
            for event_index, stream, payload in rows:
                if stream != "stdout":
                    continue
                event = parse_line(payload)
                for turn, by_content in readings:
                    fed = turn.feed(event, event_index, stamp, payload if by_content else None)
                    items.extend(fed.evidence)
            added += _store_known(uow, session_id, items, stamp)  # a page's worth at a time
            after = rows[-1][0]
        if status == "running":
            continue  # its open turn gets its evidence from ingest, when it closes
        for turn, _ in readings:
            added += _store_known(uow, session_id, turn.close().evidence, stamp)  # as completion did
    return added


def _store_known(uow, session_id, items, stamp):
    """Store the items of turns the session has stored; the rest name no turn."""
    stored = uow.turns.known(session_id, {item["turn_id"] for item in items})
    return uow.evidence.add_many(session_id, [i for i in items if i["turn_id"] in stored], stamp)


def _cursor(after):
    if after in (None, ""):
        return 0
    try:
        value = int(after)
    except ValueError:
        raise InvalidCursor("cursor must be an evidence id", {"after": after}) from None
    if not 0 <= value <= MAX_MESSAGE_ID:
        raise InvalidCursor("cursor is not an evidence id", {"after": after})
    return value
