"""The open turn of a session: stored, restored, fed, and shown.

`OpenTurn` owns the three folds of a turn still accumulating: the accumulator (the
turn's parts and identity, and what it keeps across turns: the replay window and
chain), the live events and the evidence lines. Ingest, completion and the evidence
backfill feed lines through it alone; what needs the database (the turn's saved
parts, whether a re-sent turn's first key is stored) comes in as a callable.

Its stored form (`agent_sessions.turn_state`; its content parts are stored apart) is
explicit and versioned, each field written and read by name:

    {"v": 1,
     "turn": {...},       the accumulator's open turn (TurnBuffer.header())
     "stream": {...},     the accumulator's state across turns (Accumulator.stream_state())
     "live": {...}|null,  the open live turn (LiveEvents.stored())
     "evidence": {...}}   shell tool id -> [first line, last line, exit code], absent
                          while no shell command is open

Version 0 (no "v") is what releases before this one stored: the accumulator's
`snapshot()` at the top ("turn", "recent_ids", "replay", "runs") beside "live" and
"evidence" (absent when empty); databases hold such rows, and they are read as they
stand. A key a reader lacks takes its default (a row written before the field
existed); a key it does not know is ignored, deliberately, so that a release can add
a field without a new version and the release before it still reads the rows.
Renaming a field or changing what it means takes a new version and a reader of the
old one here. A version above VERSION is refused (UnknownTurnFormat) rather than
read wrong: a row of a later release, after a rollback.

`has_open_turn` and `open_turn` show the stored open turn (GET of one session), the
same on every worker and after a restart. Pure.
"""
from dataclasses import replace
from typing import NamedTuple

from app.transcript.accumulator import Accumulator
from app.transcript.accumulator import runner_note
from app.transcript.evidence import TOOL_RESULT_MAX_BYTES
from app.transcript.evidence import EvidenceLines
from app.transcript.evidence import tool_result_items
from app.transcript.live_events import LiveEvents
from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.transcript_turn import normalized_blocks
from app.transcript.turns import Turn

VERSION = 1


class UnknownTurnFormat(ValueError):
    """A stored open turn of a version this code cannot read (a later release's)."""


class Fed(NamedTuple):
    """What a line (or completion) brought: the turns it closed (TranscriptTurns), a row
    draft per turn or note it completed (None where the policy keeps nothing), its live
    events (None: it adds nothing live), the evidence items of the turns it closed, and
    their tool calls with their results (evidence.tool_result_items), each with its
    turn's `place`: the index in `drafts` of that turn's draft."""

    turns: list | tuple
    drafts: list | tuple
    live: list | None
    evidence: list | tuple
    tool_results: list | tuple = ()


NOTHING = Fed((), (), None, ())


class OpenTurn:
    """The accumulator, live events and evidence lines of one session's open turn.

    `policy` (flush_policy.py) drafts the rows, None for none. `is_stored(outcome)`
    answers whether the key a re-sent turn or note had the first time
    (`outcome.replay_key`) is stored; None leaves re-sent output unsettled.
    `saved_parts()` takes the closed turn's parts saved while it was open. A closed
    turn's tool results keep at most `tool_result_bytes` of output each.
    """

    def __init__(self, accumulator=None, live=None, evidence=None, *, policy=None,
                 is_stored=None, saved_parts=None, shell_only=False,
                 tool_result_bytes=TOOL_RESULT_MAX_BYTES):
        self.accumulator = accumulator or Accumulator()
        self.live = live  # None: no live events (the backfill)
        self.evidence = evidence or EvidenceLines()
        self.policy = policy
        self.is_stored = is_stored
        self.saved_parts = saved_parts
        self.shell_only = shell_only
        self.tool_result_bytes = tool_result_bytes

    @classmethod
    def restore(cls, stored, policy=None, *, is_stored=None, saved_parts=None,
                load_parts=None, tool_result_bytes=TOOL_RESULT_MAX_BYTES):
        """The open turn a `snapshot()` (of any version read here) stored; None or {}: a
        session with no state yet. `load_parts()` reads the saved parts without taking
        them (a prompt echo asks whether the open turn holds text)."""
        data = read(stored)
        accumulator = Accumulator.from_stored(data["turn"], data["stream"])
        accumulator.load_saved_parts = load_parts
        return cls(accumulator, LiveEvents.from_stored(data["live"]),
                   EvidenceLines(data["evidence"]), policy=policy, is_stored=is_stored,
                   saved_parts=saved_parts, tool_result_bytes=tool_result_bytes)

    @classmethod
    def for_evidence(cls):
        """A fresh open turn that reads shell commands only: no live events, no rows, and
        of each line only the blocks evidence reads (a turn's key is a digest of its line
        ids, not of its blocks, so it comes out the same)."""
        return cls(shell_only=True)

    def snapshot(self):
        """The open turn to store (take and save its parts first: `take_unsaved_parts`)."""
        accumulator = self.accumulator
        stored = {"v": VERSION, "turn": accumulator.turn_header(),
                  "stream": accumulator.stream_state(),
                  "live": self.live.stored() if self.live else None}
        if self.evidence.state:  # absent between commands, as most of the time
            stored["evidence"] = self.evidence.stored()
        return stored

    def take_unsaved_parts(self):
        """(the part number from which saved parts are to be deleted, or None; the
        accumulator's UnsavedParts): what the caller saves before `snapshot()`."""
        accumulator = self.accumulator
        return accumulator.take_dropped_parts(), accumulator.take_unsaved_parts()

    def feed(self, event, event_index, received_at, line=None):
        """One stdout line, `event` as the session's parser read it from `line`, received
        at `received_at` (ISO text). A re-sent copy of a recent line brings NOTHING."""
        accumulator, evidence = self.accumulator, self.evidence
        if self.shell_only:
            event = replace(event, blocks=evidence.shell_blocks(event) + _text_mark(event))
        outcomes = accumulator.feed_unless_repeat(event, event_index, received_at, line)
        if outcomes is None:
            return NOTHING
        evidence.observe(event, event_index)
        turns, drafts, items, tools, closed = self._complete(outcomes) if outcomes else NOTHING_CLOSED
        live = self.live and self.live.for_line(event, event_index, received_at, accumulator.buffer,
                                                closed, accumulator.usage_changed)
        return Fed(turns, drafts, live, items, tools)

    def note(self, event_index, payload):
        """A line the runner wrote on its `system` stream: a note of its own."""
        turns, drafts, items, tools, _ = self._complete([runner_note(event_index, payload)])
        return Fed(turns, drafts, None, items, tools)

    def close(self, completed_at=None, status=None, exit_code=None):
        """Process completion (at `completed_at`, with `status` and `exit_code`): the open
        turn closes, if it holds anything, and so does the live session."""
        turn = self.accumulator.close(completed_at=completed_at)
        turns, drafts, items, tools, closed = self._complete([turn]) if turn else NOTHING_CLOSED
        live = self.live and self.live.for_completion(closed, status, exit_code)
        return Fed(turns, drafts, live, items, tools)

    def _complete(self, outcomes):
        """(turns, drafts, evidence items, tool results, the last turn) of what a line
        completed."""
        turns, drafts, items, tools, closed = [], [], [], [], None
        for outcome in outcomes:
            outcome = self._settled(outcome)
            if isinstance(outcome, Turn):
                outcome = closed = self._whole(outcome)
                turns.append(outcome)
                items.extend(self.evidence.take(outcome))
                if not self.shell_only:
                    tools.extend({**item, "place": len(drafts)}
                                 for item in tool_result_items(outcome, self.tool_result_bytes))
            drafts.append(self.policy.draft(outcome) if self.policy else None)
        return turns, drafts, items, tools, closed

    def _settled(self, outcome):
        """A turn or note its lines may have brought before (re-sent under new seqs): it
        takes its earlier key when that key is stored, so it writes and counts nothing
        again. A turn's verdict tells the accumulator whether the re-sending goes on."""
        key = outcome.replay_key
        if self.is_stored is None or key is None or key == outcome.key:
            return outcome
        replayed = self.is_stored(outcome)
        if isinstance(outcome, Turn):
            self.accumulator.settle_replay(replayed)
        return replace(outcome, key=key) if replayed else outcome

    def _whole(self, turn):
        """A closed turn, whole (the parts saved while it was open put back) and normalized."""
        if turn.saved_parts:
            turn = turn.with_saved_parts(self.saved_parts())
        return TranscriptTurn.from_turn(turn)


NOTHING_CLOSED = ((), (), (), (), None)
# What a shell-only reading keeps of a line's text: that there was some, so a prompt echo
# flushes the turn at the same line as ingest did (and the turn gets the same key).
TEXT_MARK = ({"type": "text", "text": "."},)


def _text_mark(event):
    if any(block.get("type") == "text" and isinstance(block.get("text"), str)
           and block["text"].strip() for block in event.blocks):
        return TEXT_MARK
    return ()


def read(stored):
    """A stored open turn as {"turn", "stream", "live", "evidence"}, whatever version
    stored it; defaults where it holds nothing."""
    if not stored:
        return {"turn": {}, "stream": {}, "live": None, "evidence": {}}
    version = stored.get("v", 0)
    if version == 0:  # the accumulator's snapshot at the top, beside "live" and "evidence"
        return {"turn": stored["turn"], "stream": stored, "live": stored.get("live"),
                "evidence": stored.get("evidence") or {}}
    if version != VERSION:
        raise UnknownTurnFormat(f"an open turn stored in format {version!r}; this release"
                                f" reads formats 0 to {VERSION}")
    return {"turn": stored.get("turn") or {}, "stream": stored.get("stream") or {},
            "live": stored.get("live"), "evidence": stored.get("evidence") or {}}


def has_open_turn(snapshot):
    """True when the stored snapshot holds a turn still accumulating."""
    if not snapshot:
        return False
    data = read(snapshot)
    return bool(data["live"] or data["turn"].get("saved_parts"))


def open_turn(snapshot, parts):
    """{turn_id, started_at, event_index, visible_text, content_blocks} of the open
    turn (blocks in arrival order, as they will be flushed), or None.

    Its id is the live events' turn_id; a turn begun before there were live events
    (migration 0012) is named by its first line, as the live events would name it.
    """
    if not has_open_turn(snapshot):
        return None
    data = read(snapshot)
    header, live = data["turn"], data["live"] or {}
    blocks = normalized_blocks(parts)
    first = live.get("event_index", header.get("first_event_index"))
    return {
        "turn_id": live.get("turn_id") or f"t{first}",
        "started_at": live.get("started_at") or header.get("started_at"),
        "event_index": first,
        "visible_text": "\n\n".join(b["text"] for b in blocks if b.get("type") == "text"),
        "content_blocks": blocks,
    }
