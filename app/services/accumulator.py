"""Accumulation: stream events in, closed turns and system notes out.

Pure and in-memory. It knows nothing of sessions, policies or storage. Its
state is a small header (`snapshot()` / `Accumulator.restore()`) plus the open
turn's content parts, which the caller saves append-only (`take_unsaved_parts`)
so that each request costs the same however long the turn has grown.
"""
from collections import deque

from app.services import stream_events as ev
from app.services.turns import SystemNote
from app.services.turns import Turn
from app.services.turns import TurnBuffer
from app.services.turns import turn_key

__all__ = ["Accumulator", "SystemNote", "Turn", "runner_note", "REPLAY_WINDOW"]

# How many recent line ids are remembered to spot lines a runner sends again
# under new seqs. Bounded so the stored state stays a few kilobytes.
REPLAY_WINDOW = 256
RESULT_TRIGGER = "result"
COMPLETION_TRIGGER = "completion"


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
        """An accumulator from a `snapshot()` (None: a session with no state yet)."""
        if not snapshot:
            return cls()
        return cls(TurnBuffer.from_header(snapshot["turn"]), snapshot["recent_ids"])

    def snapshot(self):
        """The state to store, without the parts (take and save those first)."""
        if self.buffer.parts:
            raise RuntimeError("take_unsaved_parts() before snapshot()")
        return {"turn": self.buffer.header(), "recent_ids": list(self._recent)}

    def take_unsaved_parts(self):
        """(first part number, parts) the caller must save for the open turn."""
        buf = self.buffer
        start, parts = buf.saved_parts, buf.parts
        buf.saved_parts += len(parts)
        buf.parts = []
        return start, parts

    def feed(self, event, event_index):
        """Take one event; return what it completed (a Turn, a SystemNote, or nothing)."""
        if event.identity and not self._first_sighting(event.identity):
            return []
        identity = event.identity or f"@{event_index}"
        if event.kind == ev.SYSTEM:
            return [SystemNote(f"system:{identity}", event.text, event.info.get("subtype", ""))]
        if event.kind == ev.RESULT:
            self.buffer.add_identity(identity, event_index)
            return [self._close(RESULT_TRIGGER, event.info)]
        if event.kind not in (ev.ASSISTANT, ev.TOOL_RESULTS):
            return []
        self.buffer.add_identity(identity, event_index)
        if event.message_id and event.message_id not in self.buffer.message_ids:
            self.buffer.message_ids.append(event.message_id)
        if event.message_id and event.info.get("usage"):
            self._keep_usage(event.message_id, event.info["usage"])
        self.buffer.parts.extend(event.blocks)
        return []

    def close(self):
        """Process completion: close the open turn, if it holds anything."""
        if self.buffer.is_empty():
            self.buffer = TurnBuffer()
            return None
        return self._close(COMPLETION_TRIGGER, {})

    def _keep_usage(self, message_id, usage):
        """One usage per message id: the fullest report seen (later lines may add tokens)."""
        known = self.buffer.usage.get(message_id)
        if known is None or sum(usage.values()) > sum(known.values()):
            self.buffer.usage[message_id] = dict(usage)

    def _first_sighting(self, identity):
        """Record a line id; False when it was seen within the replay window."""
        if identity in self._recent_set:
            return False
        if len(self._recent) == REPLAY_WINDOW:
            self._recent_set.discard(self._recent[0])
        self._recent.append(identity)
        self._recent_set.add(identity)
        return True

    def _close(self, trigger, result):
        buf = self.buffer
        turn = Turn(
            key=turn_key(buf.digest),
            parts=tuple(buf.parts),
            message_ids=tuple(buf.message_ids),
            trigger=trigger,
            result=dict(result),
            first_event_index=buf.first_event_index,
            last_event_index=buf.last_event_index,
            saved_parts=buf.saved_parts,
            usage=dict(buf.usage),
        )
        self.buffer = TurnBuffer()
        return turn


def runner_note(event_index, payload):
    """A line the runner itself wrote on the `system` stream (not agent output)."""
    return SystemNote(f"system:@{event_index}", payload.strip(), "runner")
