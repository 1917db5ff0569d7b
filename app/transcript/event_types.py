"""What one stdout line can mean: the `StreamEvent` value and its kinds."""
from dataclasses import dataclass
from dataclasses import field

ASSISTANT = "assistant"
TOOL_RESULTS = "tool_results"
RESULT = "result"
SYSTEM = "system"
# A provider's "a new turn begins here" line (Codex `turn.started`): it starts a new
# scope for item ids and may stamp the turn's start time, but adds no content.
TURN_STARTED = "turn_started"
IGNORED = "ignored"


@dataclass(slots=True)  # not frozen: made for every line (see Chunk in app/core/records.py)
class StreamEvent:
    """What one line means to the accumulator.

    `identity` is the line's own id (Claude's `uuid`) when it has one; lines
    without one are identified by their position in the buffer instead.

    `item_id` names a piece of content that the provider may restate (a Codex
    item: started, updated, completed). Within one turn, the blocks of the
    latest event with a given `item_id` replace the earlier ones, in the place
    where the item first appeared. `item_done` marks an item's final state:
    nothing restates it after that.
    """

    kind: str
    blocks: tuple = ()
    identity: str | None = None
    message_id: str | None = None
    text: str = ""
    info: dict = field(default_factory=dict)
    item_id: str | None = None
    item_done: bool = False


def ignored(reason):
    """An event that leaves the line in the output buffer only, saying why."""
    return StreamEvent(IGNORED, info={"reason": reason})

# A prompt the agent took (Claude's `isReplay` user echo, a runner's `turnlog.user`):
# `identity` is its uuid, `text` the prompt. It ends the open turn's text (a user row
# goes in at that point) and adds nothing to a turn.
USER_PROMPT = "user_prompt"
# The `info` key of an ignored event that says something to the control channel (a
# permission requested, withdrawn or resolved): {"op": ..., the fields}. The turn
# takes nothing from it; ingest records it (app/services/ingest.py).
CONTROL = "control"
