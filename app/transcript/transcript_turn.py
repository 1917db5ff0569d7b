"""`TranscriptTurn`: a closed turn in the one shape the rest of the service layer reads.

The accumulator's `Turn` holds parts as the provider's parser produced them
(Gemini's text deltas, Codex item states). `TranscriptTurn.from_turn` normalizes
them once: the flush policy, and whatever presents a turn, read blocks of one
vocabulary and never look at a provider's protocol again. Pure.
"""
from dataclasses import dataclass

from app.transcript.turns import ITEM_STATE
from app.transcript.usage import turn_usage

ASSISTANT = "assistant"
# The normalized block vocabulary. Blocks are kept as the parser wrote them
# (opaque fields such as a thinking signature included). Claude's
# `server_tool_use` (a tool the API ran itself) is kept under its own name and
# counted as a tool call.
BLOCK_TYPES = ("text", "thinking", "redacted_thinking", "tool_use", "tool_result", "reasoning")
TOOL_CALL_TYPES = ("tool_use", "server_tool_use")


@dataclass(frozen=True)
class TranscriptTurn:
    """One closed turn, provider-neutral.

    - `content_blocks`: every block in order, text included; a run of streamed
      text deltas is one text block, an item restated by its provider is its
      last state, in the place where it first appeared.
    - `visible_text`: the text blocks, one paragraph each.
    - `tool_call_ids`: the id of each tool call the turn made, once, in order.
    - `evidence_ids`: the id of each tool call whose outcome the turn holds
      (the `tool_use_id` of its tool_result blocks), once, in order.
    - `started_at` / `completed_at`: when its first line and its flush trigger
      (result line or process completion) were received, ISO-8601 UTC text.
    - `terminal_reason`: success, error, max_turns, interrupted, prompt (a prompt the
      agent took ended its text; the agent's next text is a turn of its own) or
      process_exit.
    """

    turn_id: str
    role: str
    visible_text: str
    content_blocks: list
    tool_call_ids: list
    evidence_ids: list
    started_at: str | None
    completed_at: str | None
    terminal_reason: str
    trigger: str
    result: dict
    message_ids: list
    event_range: list  # [first, last] buffer index of the lines read into the turn
    usage: dict  # the result's own totals, else each message's counted once ({} if none)

    @classmethod
    def from_turn(cls, turn):
        """Normalize a whole `Turn` (its saved parts already put back)."""
        if turn.saved_parts:
            raise ValueError("put the saved parts back first (Turn.with_saved_parts)")
        blocks = normalized_blocks(turn.parts)
        return cls(
            turn_id=turn.key,
            role=ASSISTANT,
            visible_text="\n\n".join(b["text"] for b in blocks if b.get("type") == "text"),
            content_blocks=blocks,
            tool_call_ids=_ids_once(blocks, TOOL_CALL_TYPES, "id"),
            evidence_ids=_ids_once(blocks, ("tool_result",), "tool_use_id"),
            started_at=turn.started_at,
            completed_at=turn.completed_at,
            terminal_reason=terminal_reason(turn.trigger, turn.result),
            trigger=turn.trigger,
            result=dict(turn.result),
            message_ids=list(turn.message_ids),
            event_range=[turn.first_event_index, turn.last_event_index],
            usage=turn_usage(turn.result, turn.usage),
        )

    @property
    def has_visible_text(self):
        """False when the text is empty or only whitespace."""
        return bool(self.visible_text.strip())

    @property
    def interrupted(self):
        """The turn ended because someone interrupted it."""
        return self.terminal_reason == "interrupted"

    @property
    def failed(self):
        """The turn ended with a result that reports an error."""
        return bool(self.result.get("is_error"))

    @property
    def is_empty(self):
        """Nothing was said or done: no block, no failure to report and no tokens spent
        (a turn of the agent's that printed nothing, a background task's follow-up
        answered by a result line of its own, still cost what its result reports)."""
        return not self.content_blocks and not self.failed and not self.usage


def normalized_blocks(parts):
    """The turn's parts as blocks: item states expanded, text delta runs joined.

    A run of consecutive `"delta": true` text blocks (streamed chunks of one
    message, as Gemini sends them) becomes one text block; any other block ends
    the run, and a text block without the flag starts a block of its own.
    """
    blocks, in_run = [], False
    for block in _expanded(parts):
        delta = block.get("type") == "text" and block.get("delta") is True
        if delta and in_run:
            blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + block["text"]}
        elif delta:
            blocks.append({"type": "text", "text": block["text"]})
        else:
            blocks.append(dict(block))
        in_run = delta
    return blocks


def terminal_reason(trigger, result):
    """Why a turn ended: success, error, max_turns, interrupted, prompt or process_exit.

    A result with `is_error` is a failure whatever its subtype (Claude reports
    API failures as subtype "success" with is_error true).
    """
    if trigger == "prompt":
        return "prompt"  # the agent took a prompt: its text goes on after the prompt's row
    if trigger != "result":
        return "process_exit"
    if str(result.get("terminal_reason", "")).startswith("aborted"):
        return "interrupted"
    if not result.get("is_error"):
        return "success"
    return "max_turns" if result.get("subtype") == "error_max_turns" else "error"


def _expanded(parts):
    for part in parts:
        if part.get("type") == ITEM_STATE:
            yield from part["blocks"]
        else:
            yield part


def _ids_once(blocks, types, field):
    """The `field` of each block of one of `types`, where it is a string id, each id
    once, in first-seen order. (A plain loop: every closed turn asks twice, and
    the generators it replaces cost a fifth of normalizing the turn.)"""
    ids = {}
    for block in blocks:
        if block.get("type") in types:
            value = block.get(field)
            if isinstance(value, str) and value:
                ids[value] = None
    return list(ids)
