"""Write-side use cases: runner output, process completion, usage reports.

Each runs in one write transaction that first locks the session row, so the
event numbering, the open turn and the counters of a session change serially
and together: a crash leaves either all of a request's effects or none.
"""
from app.services.accumulator import Accumulator
from app.services.accumulator import runner_note
from app.services.clock import iso_after
from app.services.clock import to_iso
from app.services.clock import utc_now
from app.services.errors import SessionClosed
from app.services.errors import SessionNotFound
from app.services.flush_policy import policy_for
from app.services.models import IngestReceipt
from app.services.models import StoredOutput
from app.services.stream_events import parse_line


def ingest_output(session_id, chunks, uow, *, retention_seconds, clock=utc_now):
    """Buffer the runner's chunks and fold their stdout lines into the transcript."""
    with uow:
        session = _locked_session(uow, session_id)
        fresh, duplicates = _drop_duplicates(chunks, uow.outputs.known_seqs(
            session_id, {c.seq for c in chunks if c.seq is not None}))
        if not fresh:
            return IngestReceipt(0, duplicates, _last_index(session.next_event_index), 0)
        if session.is_completed:
            raise SessionClosed(
                f"session {session_id} is {session.status}; it takes no more output",
                {"status": session.status, "new_chunks": len(fresh)},
            )
        now = clock()
        stamp = to_iso(now)
        start = session.next_event_index
        events = [parse_line(c.data) if c.stream == "stdout" else None for c in fresh]
        stored = [
            StoredOutput(start + offset, chunk.stream, chunk.data, chunk.seq, stamp,
                         event.identity if event else None)
            for offset, (chunk, event) in enumerate(zip(fresh, events))
        ]
        # Asked before this batch is stored, so only earlier arrivals count as seen.
        seen = uow.outputs.known_line_ids(session_id, {o.line_id for o in stored if o.line_id})
        uow.outputs.add_many(session_id, stored, iso_after(now, retention_seconds))
        written = _transcribe(uow, session, zip(stored, events), seen, stamp)
        uow.sessions.record_ingest(session_id, start + len(stored), written, stamp)
        uow.commit()
    return IngestReceipt(len(stored), duplicates, stored[-1].event_index, written)


def complete_session(session_id, exit_code, uow, *, clock=utc_now):
    """Process completion: flush the open turn and close the session (idempotent)."""
    with uow:
        session = _locked_session(uow, session_id)
        if session.is_completed:
            return session
        stamp = to_iso(clock())
        accumulator = Accumulator.restore(uow.turn_states.load(session_id))
        turn = accumulator.close()
        policy = policy_for(session.session_type, session.context)
        written = _write_drafts(uow, session_id, [policy.draft(turn)] if turn else [], stamp)
        uow.turn_states.save(session_id, accumulator.snapshot(), stamp)
        status = "completed" if exit_code in (0, None) else "failed"
        uow.sessions.mark_completed(session_id, status, exit_code, stamp)
        uow.sessions.add_messages(session_id, written, stamp)
        session = uow.sessions.get(session_id)
        uow.commit()
    return session


def record_usage(session_id, report, uow, *, clock=utc_now):
    """Add a usage report to the session's counters once; False for a repeat."""
    with uow:
        _locked_session(uow, session_id)
        stamp = to_iso(clock())
        counted = uow.usage.add_if_new(session_id, report["report_id"], report["input_tokens"],
                                       report["output_tokens"], report["requests"], stamp)
        if counted:
            uow.sessions.add_usage(session_id, report["input_tokens"], report["output_tokens"],
                                   report["requests"], stamp)
        session = uow.sessions.get(session_id)
        uow.commit()
    return counted, session


def _locked_session(uow, session_id):
    session = uow.sessions.get_for_update(session_id)
    if session is None:
        raise SessionNotFound(f"no session {session_id}", {"session_id": session_id})
    return session


def _drop_duplicates(chunks, known_seqs):
    """Chunks whose seq is stored already, or repeated in this batch, are duplicates."""
    seen = set(known_seqs)
    fresh = []
    for chunk in chunks:
        if chunk.seq is not None:
            if chunk.seq in seen:
                continue
            seen.add(chunk.seq)
        fresh.append(chunk)
    return fresh, len(chunks) - len(fresh)


def _transcribe(uow, session, outputs, seen_line_ids, stamp):
    """Feed new lines to the session's open turn; write the rows it completes.

    A line whose id was seen before (a runner re-sending lines under new seqs)
    stays in the buffer but is not read into a turn a second time.
    """
    policy = policy_for(session.session_type, session.context)
    accumulator = Accumulator.restore(uow.turn_states.load(session.session_id))
    seen = set(seen_line_ids)
    drafts = []
    for out, event in outputs:
        if out.stream == "system":
            drafts.append(policy.draft(runner_note(out.event_index, out.payload)))
        if event is None or out.line_id in seen:
            continue
        if out.line_id:
            seen.add(out.line_id)
        drafts.extend(policy.draft(outcome) for outcome in accumulator.feed(event, out.event_index))
    uow.turn_states.save(session.session_id, accumulator.snapshot(), stamp)
    return _write_drafts(uow, session.session_id, drafts, stamp)


def _write_drafts(uow, session_id, drafts, stamp):
    """Insert each new row; return how many were new (the message_count delta)."""
    return uow.messages.add_many_if_new(session_id, [d for d in drafts if d is not None], stamp)


def _last_index(next_event_index):
    return next_event_index - 1 if next_event_index else None
