"""What one stdout line can mean: the `StreamEvent` value and its kinds."""
from dataclasses import dataclass
from dataclasses import field

ASSISTANT = "assistant"
TOOL_RESULTS = "tool_results"
RESULT = "result"
SYSTEM = "system"
IGNORED = "ignored"


@dataclass(frozen=True)
class StreamEvent:
    """What one line means to the accumulator.

    `identity` is the line's own id (Claude's `uuid`) when it has one; lines
    without one are identified by their position in the buffer instead.
    """

    kind: str
    blocks: tuple = ()
    identity: str | None = None
    message_id: str | None = None
    text: str = ""
    info: dict = field(default_factory=dict)


def ignored(reason):
    """An event that leaves the line in the output buffer only, saying why."""
    return StreamEvent(IGNORED, info={"reason": reason})
