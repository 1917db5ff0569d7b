"""Accumulation: stream events in, closed turns and system notes out.

Pure and in-memory. It knows nothing of sessions, policies or storage; its
state round-trips through `snapshot()` / `Accumulator.restore()` so an open turn
survives a restart when the caller stores the snapshot.
"""
import hashlib
from collections import deque
from dataclasses import dataclass
from dataclasses import field

from app.services import stream_events as ev

# How many recent line ids are remembered to spot lines a runner sends again
# under new seqs. Bounded so the stored state stays a few kilobytes.
REPLAY_WINDOW = 256
RESULT_TRIGGER = "result"
COMPLETION_TRIGGER = "completion"


@dataclass
class TurnBuffer:
    """The open turn: everything seen since the last flush trigger."""

    texts: list = field(default_factory=list)
    blocks: list = field(default_factory=list)  # non-text blocks, in arrival order
    identities: list = field(default_factory=list)
    message_ids: list = field(default_factory=list)
    first_event_index: int | None = None
    last_event_index: int | None = None

    def is_empty(self):
        return not (self.texts or self.blocks)

    def to_dict(self):
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


@dataclass(frozen=True)
class Turn:
    """A closed turn, ready for the flush policy to judge."""

    key: str
    texts: tuple
    blocks: tuple
    message_ids: tuple
    trigger: str
    result: dict
    first_event_index: int | None
    last_event_index: int | None

    @property
    def text(self):
        """The visible text: the turn's text blocks, one paragraph each."""
        return "\n\n".join(self.texts)

    @property
    def has_visible_text(self):
        return bool(self.text.strip())


@dataclass(frozen=True)
class SystemNote:
    """A system line worth a transcript row of its own."""

    key: str
    text: str
    subtype: str


class Accumulator:
    """Folds stream events into turns; a `result` line or `close()` ends a turn.

    A line whose own id was among the last REPLAY_WINDOW ids is a re-sent copy:
    it is skipped, so a replayed fragment never leaks into the open turn.
    """

    def __init__(self, buffer=None, recent_ids=()):
        self.buffer = buffer or TurnBuffer()
        self._recent = deque(recent_ids, maxlen=REPLAY_WINDOW)
        self._recent_set = set(self._recent)

    @classmethod
    def restore(cls, snapshot):
        if not snapshot:
            return cls()
        return cls(TurnBuffer.from_dict(snapshot["turn"]), snapshot["recent_ids"])

    def snapshot(self):
        return {"turn": self.buffer.to_dict(), "recent_ids": list(self._recent)}

    def feed(self, event, event_index):
        """Take one event; return what it completed (a Turn, a SystemNote, or nothing)."""
        if event.identity and not self._first_sighting(event.identity):
            return []
        identity = event.identity or f"@{event_index}"
        if event.kind == ev.SYSTEM:
            return [SystemNote(f"system:{identity}", event.text, event.info.get("subtype", ""))]
        if event.kind == ev.RESULT:
            self._remember(identity, event_index)
            return [self._close(RESULT_TRIGGER, event.info)]
        if event.kind not in (ev.ASSISTANT, ev.TOOL_RESULTS):
            return []
        self._remember(identity, event_index)
        if event.message_id and event.message_id not in self.buffer.message_ids:
            self.buffer.message_ids.append(event.message_id)
        for block in event.blocks:
            if block.get("type") == "text":
                self.buffer.texts.append(block["text"])
            else:
                self.buffer.blocks.append(block)
        return []

    def close(self):
        """Process completion: close the open turn, if it holds anything."""
        if self.buffer.is_empty():
            self.buffer = TurnBuffer()
            return None
        return self._close(COMPLETION_TRIGGER, {})

    def _first_sighting(self, identity):
        """Record a line id; False when it was seen within the replay window."""
        if identity in self._recent_set:
            return False
        if len(self._recent) == REPLAY_WINDOW:
            self._recent_set.discard(self._recent[0])
        self._recent.append(identity)
        self._recent_set.add(identity)
        return True

    def _remember(self, identity, event_index):
        buf = self.buffer
        buf.identities.append(identity)
        if buf.first_event_index is None:
            buf.first_event_index = event_index
        buf.last_event_index = event_index

    def _close(self, trigger, result):
        buf = self.buffer
        turn = Turn(
            key=turn_key(buf.identities),
            texts=tuple(buf.texts),
            blocks=tuple(buf.blocks),
            message_ids=tuple(buf.message_ids),
            trigger=trigger,
            result=dict(result),
            first_event_index=buf.first_event_index,
            last_event_index=buf.last_event_index,
        )
        self.buffer = TurnBuffer()
        return turn


def runner_note(event_index, payload):
    """A line the runner itself wrote on the `system` stream (not agent output)."""
    return SystemNote(f"system:@{event_index}", payload.strip(), "runner")


def turn_key(identities):
    """A stable name for a turn, derived from the ids of the lines that made it.

    Replaying the same lines yields the same key (so the row is not written
    twice); two turns with equal text but different lines get different keys.
    """
    digest = hashlib.sha256("\n".join(identities).encode("utf-8")).hexdigest()
    return f"turn:{digest[:40]}"
