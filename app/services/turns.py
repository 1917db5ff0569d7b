"""The shapes accumulation works in: the open turn, a closed turn, a system note."""
import hashlib
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace


@dataclass
class TurnBuffer:
    """The open turn, kept small: its content parts live outside the snapshot.

    `parts` holds the blocks (text blocks included, in arrival order) that the
    caller has not saved yet; `saved_parts` counts the ones it saved earlier.
    A turn's identity is a running digest of its line ids, so it costs the
    same to keep for a turn of ten lines as for one of ten thousand.
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

    def is_empty(self):
        """True while the turn has no content at all."""
        return not self.parts and not self.saved_parts

    def add_identity(self, identity, event_index):
        """Fold one line into the turn's identity and index range."""
        self.digest = hashlib.sha256(f"{self.digest}\n{identity}".encode("utf-8")).hexdigest()
        if self.first_event_index is None:
            self.first_event_index = event_index
        self.last_event_index = event_index

    def header(self):
        """Everything but the unsaved parts, as plain JSON-able data."""
        data = dict(self.__dict__)
        del data["parts"]
        return data

    @classmethod
    def from_header(cls, data):
        return cls(**data)


@dataclass(frozen=True)
class Turn:
    """A closed turn, ready for the flush policy to judge.

    When `saved_parts` is not zero the caller must first hand back the parts it
    saved while the turn was open, with `with_saved_parts`.
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

    def with_saved_parts(self, saved):
        """This turn with its earlier, saved parts put back in front."""
        if len(saved) != self.saved_parts:
            raise ValueError(f"expected {self.saved_parts} saved parts, got {len(saved)}")
        return replace(self, parts=tuple(saved) + self.parts, saved_parts=0)

    @property
    def texts(self):
        """The turn's paragraphs: one per text block, except that a run of
        consecutive `"delta": true` text blocks (streamed chunks of one message,
        as Gemini sends them) is concatenated into one paragraph. Any other block
        ends the run; a text block without the flag starts a new paragraph."""
        texts, in_run = [], False
        for part in self.parts:
            if part.get("type") != "text":
                in_run = False
                continue
            delta = part.get("delta") is True
            if delta and in_run:
                texts[-1] += part["text"]
            else:
                texts.append(part["text"])
            in_run = delta
        return tuple(texts)

    @property
    def blocks(self):
        """The non-text blocks, in arrival order."""
        return tuple(p for p in self.parts if p.get("type") != "text")

    @property
    def text(self):
        """The visible text: the turn's text blocks, one paragraph each."""
        return "\n\n".join(self.texts)

    @property
    def has_visible_text(self):
        return bool(self.text.strip())

    @property
    def token_usage(self):
        """The turn's tokens, each message counted once: {} when no line reported any."""
        totals = {}
        for usage in self.usage.values():
            for key, value in usage.items():
                totals[key] = totals.get(key, 0) + value
        return totals

    @property
    def terminal_reason(self):
        """Why the turn ended: success, error, max_turns, interrupted or process_exit.

        A result with `is_error` is a failure whatever its subtype (Claude reports
        API failures as subtype "success" with is_error true).
        """
        if self.trigger != "result":
            return "process_exit"
        result = self.result
        if str(result.get("terminal_reason", "")).startswith("aborted"):
            return "interrupted"
        if not result.get("is_error"):
            return "success"
        return "max_turns" if result.get("subtype") == "error_max_turns" else "error"


@dataclass(frozen=True)
class SystemNote:
    """A system line worth a transcript row of its own."""

    key: str
    text: str
    subtype: str


def turn_key(digest):
    """The stored name of a turn: replaying the same lines yields the same name,
    two turns with equal text but different lines get different names."""
    return f"turn:{digest[:40]}"
