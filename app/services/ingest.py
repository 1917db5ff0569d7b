"""Write-side use cases: runner output, process completion, usage reports.

Each runs in one write transaction that first locks the session row, so the
event numbering, the open turn and the counters of a session change serially
and together: a crash leaves either all of a request's effects or none.
"""
import logging
import shlex
from typing import NamedTuple

from app.core.clock import iso_after
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.core.errors import SeqConflict
from app.core.errors import SessionClosed
from app.core.errors import SessionNotFound
from app.core.errors import SessionOutputLimit
from app.core.records import IngestReceipt
from app.core.records import StoredOutput
from app.core.records import TranscriptDelta
from app.formats import event_lines
from app.providers import get_parser
from app.services import quotas
from app.services import tokens
from app.services.access import OPEN
from app.services.ingest_control import apply_controls
from app.services.ingest_control import apply_prompts
from app.transcript.event_types import CONTROL
from app.transcript.evidence import TOOL_RESULT_MAX_BYTES
from app.transcript.flush_policy import policy_for
from app.transcript.open_turn import NOTHING
from app.transcript.open_turn import OpenTurn
from app.transcript.turns import Turn
from app.transcript.usage import transcript_delta

log = logging.getLogger(__name__)
NOTHING_WRITTEN = TranscriptDelta(0, 0, 0)
# What a failed session keeps of its stderr: enough to say why, bounded per line.
STDERR_TAIL_LINES = 20
STDERR_LINE_CHARS = 1000
NEWEST = 2**63 - 1  # above every row id


def ingest_output(session_id, chunks, uow, *, retention_seconds, caller=OPEN, clock=utc_now,
                  max_output_bytes=0, usage_reports=(), day_quotas=quotas.DayQuotas(),
                  token_lifetime_seconds=0, permission_timeout_seconds=600,
                  tool_result_max_bytes=TOOL_RESULT_MAX_BYTES):
    """Buffer the runner's chunks and fold their stdout lines into the transcript;
    count `usage_reports` (each once per report_id) in the same transaction.

    With `max_output_bytes`, a batch that would take the session's output past it is
    refused whole (SessionOutputLimit); one that would take its owner's output today
    past `day_quotas.output_bytes` likewise (QuotaExceeded). What was accepted before
    stays. A request of a running session's write token renews it for
    `token_lifetime_seconds`. A permission request recorded from a line expires
    `permission_timeout_seconds` after it was received (0: never). A closed turn's tool
    results keep at most `tool_result_max_bytes` of output each.
    """
    with uow:
        locked = _locked_for_write(uow, session_id, caller)
        session = locked.session
        fresh, duplicates = _drop_duplicates(chunks, _stored_seqs(uow, locked, chunks))
        if not fresh:
            now = clock()
            counted = _count_usage(uow, session_id, usage_reports, to_iso(now))
            renewed = not session.is_completed and tokens.renew_session_token(
                uow, caller, now, token_lifetime_seconds)
            if counted or renewed:
                uow.commit()
            return IngestReceipt(0, duplicates, _last_index(session.next_event_index), 0,
                                 counted)
        if session.is_completed:
            raise SessionClosed(
                f"session {session_id} is {session.status}; it takes no more output",
                {"status": session.status, "new_chunks": len(fresh)},
            )
        new_bytes = sum(len(chunk.data.encode("utf-8", "surrogatepass")) for chunk in fresh)
        if max_output_bytes and session.output_bytes + new_bytes > max_output_bytes:
            raise SessionOutputLimit(
                f"session {session_id} may take {max_output_bytes} bytes of output in all"
                f" (TURNLOG_MAX_SESSION_OUTPUT_BYTES); it holds {session.output_bytes} and this"
                f" batch brings {new_bytes} more. Nothing of this batch was stored",
                {"limit": max_output_bytes, "output_bytes": session.output_bytes,
                 "batch_bytes": new_bytes})
        parse_line = get_parser(session.provider)  # before anything is stored
        now = clock()
        quotas.count_output(uow, session.user_id, new_bytes, now, day_quotas)
        stamp = to_iso(now)
        tokens.renew_session_token(uow, caller, now, token_lifetime_seconds)
        start = session.next_event_index
        stored = [
            StoredOutput(start + offset, chunk.stream, chunk.data, chunk.seq, stamp)
            for offset, chunk in enumerate(fresh)
        ]
        delta, live_events, turn_state = transcribe(
            uow, session, locked.turn_state, stored, parse_line,
            (now, stamp, permission_timeout_seconds), tool_result_max_bytes)
        uow.outputs.add_many(session_id, stored, iso_after(now, retention_seconds), live_events)
        counted = _count_usage(uow, session_id, usage_reports, stamp)
        uow.sessions.record_ingest(session_id, start + len(stored), delta.messages, stamp,
                                   turn_state=turn_state, max_seq=_max_seq(locked.max_seq, fresh),
                                   new_turns=delta.turns, new_visible=delta.visible,
                                   new_bytes=new_bytes, new_usage=delta.usage)
        uow.commit()
    return IngestReceipt(len(stored), duplicates, stored[-1].event_index, delta.messages, counted)


def complete_session(session_id, exit_code, uow, *, caller=OPEN, clock=utc_now,
                     token_grace_seconds=3600, reason=None,
                     tool_result_max_bytes=TOOL_RESULT_MAX_BYTES):
    """Process completion: flush the open turn and close the session (idempotent).

    The session's own write tokens expire `token_grace_seconds` later; the closed turn's
    tool results keep at most `tool_result_max_bytes` of output each. A failed session
    keeps its last STDERR_TAIL_LINES stderr lines (the buffer they are read from expires)
    and `reason`, the runner's word on why the agent never ran.
    """
    with uow:
        locked = _locked_for_write(uow, session_id, caller)
        session, snapshot = locked.session, locked.turn_state
        if session.is_completed:
            return session
        now = clock()
        stamp = to_iso(now)
        uow.tokens.expire_session_tokens(session_id, iso_after(now, token_grace_seconds))
        status = "completed" if exit_code in (0, None) else "failed"
        turn = _open_turn(uow, session, snapshot, tool_result_bytes=tool_result_max_bytes)
        closed = turn.close(stamp, status, exit_code)
        delta, row_ids = _write(uow, session_id, closed.turns, closed.drafts, stamp)
        _record_evidence(uow, session_id, closed.evidence, stamp)
        _record_tool_results(uow, session_id, closed.tool_results, closed.drafts, row_ids, stamp)
        uow.final_events.add(session_id, session.next_event_index,
                             event_lines.encode(closed.live, row_ids), stamp)
        uow.turn_states.save(session_id, turn.snapshot(), stamp)
        failed = status == "failed"
        uow.sessions.mark_completed(session_id, status, exit_code, stamp,
                                    failure_reason=reason if failed else None,
                                    stderr_tail=_stderr_tail(uow, session_id) if failed else None)
        uow.sessions.add_messages(session_id, delta.messages, stamp, new_turns=delta.turns,
                                  new_visible=delta.visible, new_usage=delta.usage)
        session = uow.sessions.get(session_id)
        uow.commit()
    log.info("session %s %s: exit code %s, %d messages", session_id, status, exit_code, session.message_count)
    return session


def _stderr_tail(uow, session_id):
    """The session's last stderr lines, each cut to STDERR_LINE_CHARS."""
    lines = uow.outputs.last_stderr(session_id, STDERR_TAIL_LINES)
    return [line if len(line) <= STDERR_LINE_CHARS else line[:STDERR_LINE_CHARS - 1] + "…"
            for line in lines]


def record_usage(session_id, report, uow, *, caller=OPEN, clock=utc_now):
    """Add a usage report to the session's counters once; False for a repeat."""
    counted, session = record_usage_reports(session_id, [report], uow, caller=caller, clock=clock)
    return counted[0], session


def record_usage_reports(session_id, reports, uow, *, caller=OPEN, clock=utc_now):
    """Add each usage report to the session's counters once, all in one transaction;
    returns ([counted now, per report], the session). A report_id seen before, or
    earlier in `reports`, is a repeat and adds nothing."""
    with uow:
        _locked_session(uow, session_id, caller)
        counted = _count_each(uow, session_id, reports, to_iso(clock()))
        session = uow.sessions.get(session_id)
        uow.commit()
    return counted, session


def _count_each(uow, session_id, reports, stamp):
    """Count each report once per report_id (inside the caller's transaction, the session
    locked); [counted now, per report]."""
    counted = [uow.usage.add_if_new(session_id, r["report_id"], r["input_tokens"],
                                    r["output_tokens"], r["requests"], stamp)
               for r in reports]
    new = [r for r, fresh in zip(reports, counted) if fresh]
    if new:
        uow.sessions.add_usage(session_id, sum(r["input_tokens"] for r in new),
                               sum(r["output_tokens"] for r in new),
                               sum(r["requests"] for r in new), stamp)
    return counted


def _count_usage(uow, session_id, reports, stamp):
    return sum(_count_each(uow, session_id, reports, stamp)) if reports else 0


def _locked_session(uow, session_id, caller):
    return _writable(uow.sessions.get_for_update(session_id), session_id, caller)


def _locked_for_write(uow, session_id, caller):
    """The session row locked, with its open turn's header and highest stored seq."""
    locked = uow.sessions.lock_for_write(session_id)
    _writable(locked and locked.session, session_id, caller)
    return locked


def _writable(session, session_id, caller):
    """The session, if it exists and `caller` may write it; else SessionNotFound.

    A session the token may not write is "not found", like an unknown one: its
    machine and owner are none of the token's business. What differs, and the
    operator's fix, go to the log."""
    if session is None:
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    if not caller.may_write(session):
        log.warning("refused a write to session %s (answered 404): %s", session.session_id,
                    _why_not_writable(session, caller))
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    return session


def _why_not_writable(session, caller):
    """For the operator's log: what differs between the session and the token, and the fix."""
    sid = session.session_id
    if caller.is_session_token:
        return f"the token is session {caller.session_id}'s own write token"
    if session.machine == caller.name:  # the right machine, a user outside the token's scope
        return (f"the session belongs to user {session.user_id!r}; token {caller.token_id}"
                f" writes sessions of {', '.join(map(repr, caller.users or ()))} only")
    fix = (f"flask --app wsgi assign-machine {shlex.quote(sid)}"
           f" --machine {shlex.quote(caller.name or '')}")
    if session.machine is None:
        why = "the session has no machine (opened without one, or before migration 0008)"
    else:
        why = f"the session belongs to machine {session.machine!r}"
    return (f"{why}; token {caller.token_id} writes machine {caller.name!r} only. An operator"
            f" can assign the session to it with `{fix}`")


def _stored_seqs(uow, locked, chunks):
    """{seq: the stored line} of those of the chunks' seqs the session holds already.
    Only seqs at or below the highest it ever stored need looking up, so a runner
    counting up costs no query (and a retry reads back just the lines it re-sends)."""
    highest = locked.max_seq
    if highest is None:
        return {}
    older = {c.seq for c in chunks if c.seq is not None and c.seq <= highest}
    return uow.outputs.known_seqs(locked.session.session_id, older) if older else {}


def _max_seq(highest, fresh):
    """The highest seq the session holds once `fresh` is stored (None: none has one)."""
    seqs = [c.seq for c in fresh if c.seq is not None]
    return max(seqs if highest is None else [highest, *seqs], default=None)


def _drop_duplicates(chunks, stored):
    """The chunks minus duplicates, and how many were dropped. A chunk whose seq is
    stored already (`stored`: {seq: stored Chunk}), or came earlier in this batch, is a
    duplicate when its stream and text are the same (a retry); with other content it is
    a SeqConflict, which refuses the whole request: a seq names one line for good."""
    seen = dict(stored)
    fresh = []
    for chunk in chunks:
        seq = chunk.seq
        if seq is not None:
            known = seen.get(seq)
            if known is not None:
                if known != chunk:
                    raise SeqConflict(
                        f"seq {seq} was already sent with other content (stream or text);"
                        " a seq names one line for good. Nothing of this request was stored",
                        {"seq": seq})
                continue
            seen[seq] = chunk
        fresh.append(chunk)
    return fresh, len(chunks) - len(fresh)


def transcribe(uow, session, snapshot, stored, parse_line, received,
               tool_result_bytes=TOOL_RESULT_MAX_BYTES):
    """Feed new lines, read by the parser of the session's provider, to its open
    turn (`snapshot`, as stored); write the rows it completes and return the open
    turn to store. Every line of one request was received at `received`: (now, its
    ISO text, the permission timeout)."""
    sid = session.session_id
    now, stamp, permission_timeout = received
    pending = Pending(set(), {})
    turn = _open_turn(uow, session, snapshot, pending, tool_result_bytes)
    turns, drafts, line_events, items, controls, tools = [], [], [], [], [], []
    for number, out in enumerate(stored):
        if out.stream == "stdout":
            event = parse_line(out.payload)
            fed = turn.feed(event, out.event_index, stamp, out.payload)
            if CONTROL in event.info:
                controls.append((number, out.event_index, event.info[CONTROL]))
        elif out.stream == "system":
            fed = turn.note(out.event_index, out.payload)
        else:
            fed = NOTHING
        if fed.drafts:  # it completed something (a turn or a note drafts one, None or not)
            tools.extend({**item, "place": len(drafts) + item["place"]} for item in fed.tool_results)
            turns.extend(fed.turns)
            drafts.extend(fed.drafts)
            items.extend(fed.evidence)
            pending.add(fed, number)
        line_events.append(fed.live)
    dropped, unsaved = turn.take_unsaved_parts()
    if dropped is not None:
        uow.turn_states.drop_parts_from(sid, dropped)
    uow.turn_states.append_parts(sid, unsaved.start, unsaved.parts)
    uow.turn_states.replace_parts(sid, unsaved.restated)
    delta, row_ids = _write(uow, sid, turns, drafts, stamp)
    _record_evidence(uow, sid, items, stamp)
    _record_tool_results(uow, sid, tools, drafts, row_ids, stamp)
    prompts = [d.metadata["uuid"] for d in drafts if d is not None and d.role == "user"]
    if prompts:  # only a request that holds a prompt echo looks inputs up
        apply_prompts(uow, sid, prompts, stamp)
    if controls:
        announced = apply_controls(uow, sid, [(index, c) for _, index, c in controls], now,
                                   stamp, permission_timeout)
        for (number, _, _), events in zip(controls, announced):
            if events:
                line_events[number] = [*(line_events[number] or []), *events]
    by_line = pending.rows_by_line(row_ids)
    return (delta, [event_lines.encode(events, by_line.get(number))
                    for number, events in enumerate(line_events)], turn.snapshot())


class Pending(NamedTuple):
    """The keys of the turns and rows a request has drafted but not written yet (they
    are written after all its lines are read): a copy of one of them is a copy as much
    as of a stored one, so the transcript does not depend on how lines were batched.
    `rows` maps a row's key to the line that drafted it first."""

    turns: set
    rows: dict

    def add(self, fed, number):
        self.turns.update(turn.turn_id for turn in fed.turns if not turn.is_empty)
        for draft in fed.drafts:
            if draft is not None:
                self.rows.setdefault(draft.turn_key, number)

    def rows_by_line(self, row_ids):
        """{line number: {key: row id}} of the rows written, each under the line that
        drafted it: a copy later in the request names no row, as it would in a request
        of its own (a replayed turn's turn.completed has message_id null)."""
        found = {}
        for key, row_id in row_ids.items():
            found.setdefault(self.rows[key], {})[key] = row_id
        return found


def _open_turn(uow, session, snapshot, pending=None, tool_result_bytes=TOOL_RESULT_MAX_BYTES):
    """The session's open turn from its stored `snapshot`, with the look-ups it needs;
    `pending` holds what the request drafted so far (None: nothing)."""
    sid = session.session_id
    pending = pending or Pending(set(), {})

    def is_stored(outcome):
        """Whether the key a re-sent turn or note had the first time is stored, or about
        to be (drafted earlier in this request)."""
        key = outcome.replay_key
        if isinstance(outcome, Turn):
            return key in pending.turns or key in uow.turns.known(sid, [key])
        return key in pending.rows or uow.messages.has_turn_key(sid, key)

    return OpenTurn.restore(snapshot, policy_for(session.session_type, session.context),
                            is_stored=is_stored,
                            saved_parts=lambda: uow.turn_states.take_parts(sid),
                            load_parts=lambda: uow.turn_states.load_parts(sid),
                            tool_result_bytes=tool_result_bytes)


def _write(uow, session_id, turns, drafts, stamp):
    """Record the closed turns and insert each new row; return what the counters gain
    and {turn key: row id} of the rows written.

    Only newly inserted keys count, so a replayed turn (same turn_key) moves no
    counter, whether or not it wrote a row; a new turn's usage is added to the
    session's transcript usage once, with its key. A turn with nothing in it is no
    conversation turn, unless it reports a failure or tokens.
    """
    if not turns and all(draft is None for draft in drafts):
        return NOTHING_WRITTEN, {}  # most requests close nothing: no statement, no sums
    real = [turn for turn in turns if not turn.is_empty]
    new_keys = set(uow.turns.add_many_if_new(session_id, [turn.turn_id for turn in real], stamp))
    new_turns = len(new_keys)
    usage = transcript_delta(_first_of_each(real, new_keys))
    inserted = uow.messages.insert_new(session_id, [d for d in drafts if d is not None], stamp)
    visible = sum(1 for _, d in inserted if d.role == "assistant" and d.content.strip())
    return TranscriptDelta(len(inserted), new_turns, visible, usage), {
        d.turn_key: row_id for row_id, d in inserted}


def _first_of_each(turns, keys):
    """The first of `turns` with each of `keys`: a request may close a turn and a copy
    of it (which took its key), and the usage is the turn's, once."""
    left = set(keys)
    for turn in turns:
        if turn.turn_id in left:
            left.discard(turn.turn_id)
            yield turn


def _record_evidence(uow, session_id, items, stamp):
    """Store the shell commands of the turns just closed: a statement only when there
    are some, so a request without commands costs the evidence table nothing."""
    if items:
        uow.evidence.add_many(session_id, items, stamp)


def _record_tool_results(uow, session_id, items, drafts, row_ids, stamp):
    """Store the tool calls and results of the turns just closed (`items`, each with the
    `place` of its turn's draft among `drafts`), each placed in the transcript: a turn
    that wrote an assistant row names it (message_id); one that wrote none sits after
    the session's newest row when it closed (after_message_id; 0 before any row). The
    rows of the request were written in `drafts`' order (`row_ids`: {key: id} of those
    inserted), so what precedes a turn does not depend on how its lines were batched.
    A statement only when there are some, and a look-up of the newest earlier row only
    for a turn without a row that no row of this request precedes."""
    if not items:
        return
    newest_at, newest, seen = [], 0, set()
    for draft in drafts:  # the newest row written before each draft
        newest_at.append(newest)
        if draft is not None and draft.turn_key not in seen and draft.turn_key in row_ids:
            newest = max(newest, row_ids[draft.turn_key])
        if draft is not None:
            seen.add(draft.turn_key)
    earlier = None
    placed = []
    for item in items:
        draft = drafts[item["place"]]
        own = row_ids.get(item["turn_id"]) if (
            draft is not None and draft.role == "assistant" and draft.turn_key == item["turn_id"]) else None
        after = own or newest_at[item["place"]]
        if not after:
            if earlier is None:
                earlier = uow.messages.newest_before(session_id, min(row_ids.values(), default=NEWEST))
            after = earlier
        placed.append({**item, "message_id": own, "after_message_id": after})
    uow.tool_results.add_many(session_id, placed, stamp)


def _last_index(next_event_index):
    return next_event_index - 1 if next_event_index else None
