"""The shapes accumulation works in: the open turn, a closed turn, a system note."""
import copy
import hashlib
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

# The part that holds a restatable item (a Codex item) in a turn: the item's
# blocks in their latest state. TranscriptTurn expands it into those blocks.
ITEM_STATE = "item_state"
DONE_ITEMS = 64
# What undoing a copy puts back from the turn's mark: all of its header but the
# bookkeeping of saved parts (the saved ones stay saved) and the mark itself.
MARKED = ("digest", "message_ids", "first_event_index", "last_event_index", "usage",
          "final_usage", "streaming_message", "started_at", "items", "done_items",
          "replay_digest")


@dataclass
class TurnBuffer:
    """The open turn, kept small: its content parts live outside the snapshot.

    `parts` holds the parts (blocks, text blocks included, in arrival order, and
    item states) that the caller has not saved yet; `saved_parts` counts the
    ones it saved earlier. A turn's identity is a running digest of its line
    ids, so it costs the same to keep for a turn of ten lines as for one of ten
    thousand.
    """

    parts: list = field(default_factory=list)
    saved_parts: int = 0
    digest: str = ""
    message_ids: list = field(default_factory=list)
    first_event_index: int | None = None
    last_event_index: int | None = None
    # message id -> its token usage. Claude repeats one message's usage on every
    # line of that message, so it is kept once per message id, never summed per line.
    usage: dict = field(default_factory=dict)
    # message id -> the final usage its `message_delta` reported (partial messages):
    # it overrides the snapshot the message's lines repeat, key by key.
    final_usage: dict = field(default_factory=dict)
    # The message whose stream events are arriving (its `message_start` came last).
    streaming_message: str | None = None
    # When the turn's first line was received (the caller's clock, ISO text).
    started_at: str | None = None
    # item id -> number of the part that holds it, for the items of this turn that
    # may still change (an item leaves once done, so this stays small).
    items: dict = field(default_factory=dict)
    # The last DONE_ITEMS item ids finished in this item scope: a state of one arriving
    # again is a re-sent copy. Bounded, like the line ids the accumulator remembers.
    done_items: list = field(default_factory=list)
    # The digest of the line ids a replay candidate gave (replay.py), from where it
    # started; None while no candidate named a line of this turn.
    replay_digest: str | None = None
    # The turn as it stood when a replay candidate started over inside it ({"header",
    # "parts": how many it had}): a copy that ends inside the turn is undone to it.
    replay_mark: dict | None = None
    # Saved parts from this number on are to be deleted (an undone copy), or None.
    drop_from: int | None = None
    # part number -> new content, for saved parts restated since the last save.
    # Not part of the header: the caller takes and writes them with the new parts.
    restated: dict = field(default_factory=dict)

    def is_empty(self):
        """True while the turn has no content at all."""
        return not self.parts and not self.saved_parts

    def is_untouched(self):
        """True while no line has been read into the turn (and none of its parts saved)."""
        return self.first_event_index is None and self.is_empty()

    def holds_text(self, load_saved=None):
        """True when the turn holds visible text: in its unsaved parts, or in the parts
        saved earlier (read with `load_saved()`, only when those others hold none;
        without it, saved parts are taken to hold some)."""
        if _any_text(self.parts):
            return True
        if not self.saved_parts:
            return False
        return load_saved is None or _any_text(load_saved())

    def add_identity(self, identity, event_index, received_at=None, replay_identity=None):
        """Fold one line into the turn's identity (and the replay candidate's), index
        range and start time."""
        self.digest = _fold(self.digest, identity)
        if replay_identity is not None:
            self.replay_digest = _fold(self.replay_digest or "", replay_identity)
        self.mark_start(received_at)
        if self.first_event_index is None:
            self.first_event_index = event_index
        self.last_event_index = event_index

    def mark_start(self, received_at):
        """Stamp the turn's start, unless an earlier line already did. A turn that
        was open before turns kept their start time (lines but no stamp) keeps none,
        rather than a wrong one."""
        if self.started_at is None and self.first_event_index is None:
            self.started_at = received_at

    def message_usage(self):
        """message id -> its token usage, the final report over the snapshot. Only the
        messages whose lines this turn read count (a re-sent stream event of another
        turn's message may have left its final usage here)."""
        return {message_id: {**usage, **self.final_usage.get(message_id, {})}
                for message_id, usage in self.usage.items()}

    def begin_item_scope(self):
        """Item ids seen so far name nothing any more (a new provider turn began)."""
        self.items, self.done_items = {}, []

    def restate_item(self, item_id, blocks, done=False):
        """The latest state of an item: it takes the item's place, or a new one at the
        end. A `done` item (its final state) is forgotten once placed."""
        part = {"type": ITEM_STATE, "item_id": item_id, "blocks": list(blocks)}
        number = self.items.pop(item_id, None) if done else self.items.get(item_id)
        if done:
            self.done_items = [*self.done_items[-(DONE_ITEMS - 1):], item_id]
        if number is None:
            if not done:
                self.items[item_id] = self.saved_parts + len(self.parts)
            self.parts.append(part)
        elif number >= self.saved_parts:
            self.parts[number - self.saved_parts] = part
        else:
            self.restated[number] = part

    def mark_for_replay(self):
        """Remember the turn as it stands (a replay candidate starts over inside it)."""
        header = self.header()
        del header["replay_mark"]
        self.replay_mark = None if self.is_empty() else {
            "header": copy.deepcopy(header), "parts": self.saved_parts + len(self.parts)}

    def undo_copy(self):
        """Put the turn back as it stood at the mark: what came since was a copy of it.
        False when there is no mark (the copy began between turns)."""
        mark = self.replay_mark
        if mark is None:
            return False
        total, saved = mark["parts"], self.saved_parts
        if total < saved:
            self.drop_from = total if self.drop_from is None else min(self.drop_from, total)
        self.parts = self.parts[:max(0, total - saved)]
        self.restated = {n: part for n, part in self.restated.items() if n < total}
        marked = TurnBuffer.from_header(copy.deepcopy(mark["header"]))
        for name in MARKED:
            setattr(self, name, getattr(marked, name))
        self.saved_parts = min(saved, total)
        self.replay_mark = self.replay_digest = None
        return True

    def header(self):
        """Everything but the unsaved and restated parts, as plain JSON-able data, each
        field under its own name (a stored open turn's "turn", open_turn.py)."""
        return {
            "saved_parts": self.saved_parts,
            "digest": self.digest,
            "message_ids": self.message_ids,
            "first_event_index": self.first_event_index,
            "last_event_index": self.last_event_index,
            "usage": self.usage,
            "final_usage": self.final_usage,
            "streaming_message": self.streaming_message,
            "started_at": self.started_at,
            "items": self.items,
            "done_items": self.done_items,
            "replay_digest": self.replay_digest,
            "replay_mark": self.replay_mark,
            "drop_from": self.drop_from,
        }

    @classmethod
    def from_header(cls, data):
        """The turn a `header()` describes, each field read by its name: a field the
        header lacks (it was written before the field existed) takes its default, and
        a name this code does not know is ignored (see open_turn.py)."""
        return cls(
            saved_parts=data.get("saved_parts", 0),
            digest=data.get("digest", ""),
            message_ids=data.get("message_ids", []),
            first_event_index=data.get("first_event_index"),
            last_event_index=data.get("last_event_index"),
            usage=data.get("usage", {}),
            final_usage=data.get("final_usage", {}),
            streaming_message=data.get("streaming_message"),
            started_at=data.get("started_at"),
            items=data.get("items", {}),
            done_items=data.get("done_items", []),
            replay_digest=data.get("replay_digest"),
            replay_mark=data.get("replay_mark"),
            drop_from=data.get("drop_from"),
        )


@dataclass(frozen=True)
class Turn:
    """A closed turn, as the accumulator saw it: raw parts, not yet normalized.

    When `saved_parts` is not zero the caller must first hand back the parts it
    saved while the turn was open, with `with_saved_parts`. `TranscriptTurn`
    (transcript_turn.py) is what the rest of the service layer reads.
    """

    key: str
    parts: tuple
    message_ids: tuple
    trigger: str
    result: dict
    first_event_index: int | None
    last_event_index: int | None
    saved_parts: int = 0
    usage: dict = field(default_factory=dict)  # message id -> token usage
    started_at: str | None = None
    completed_at: str | None = None
    restated: dict = field(default_factory=dict)  # saved part number -> its latest state
    # The key the turn had when its lines were first sent, if they are being re-sent
    # (replay.py): the caller takes it when that key is stored.
    replay_key: str | None = None

    def with_saved_parts(self, saved):
        """This turn with its earlier, saved parts (restated where they changed) put
        back in front."""
        if len(saved) != self.saved_parts:
            raise ValueError(f"expected {self.saved_parts} saved parts, got {len(saved)}")
        saved = list(saved)
        for number, part in self.restated.items():
            saved[number] = part
        return replace(self, parts=tuple(saved) + self.parts, saved_parts=0, restated={})


@dataclass(frozen=True)
class SystemNote:
    """A system line worth a transcript row of its own."""

    key: str
    text: str
    subtype: str
    replay_key: str | None = None  # as Turn.replay_key


@dataclass(frozen=True)
class UserPrompt:
    """A prompt the agent took (its echo): a user row of its own, keyed by its uuid."""

    key: str  # "user:<uuid>"
    text: str
    uuid: str
    event_index: int
    received_at: str | None = None
    replay_key: str | None = None  # never re-keyed: its uuid names it for good


def _any_text(parts):
    """Whether any of the parts (item states expanded) is a text block with visible text."""
    for part in parts:
        blocks = part["blocks"] if part.get("type") == ITEM_STATE else (part,)
        for block in blocks:
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str) and text.strip():
                return True
    return False


def _fold(digest, identity):
    return hashlib.sha256(f"{digest}\n{identity}".encode("utf-8")).hexdigest()


def turn_key(digest):
    """The stored name of a turn: replaying the same lines yields the same name,
    two turns with equal text but different lines get different names."""
    return f"turn:{digest[:40]}"
