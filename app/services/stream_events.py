"""Parse one stdout line of an agent into a `StreamEvent` (Claude's format).

The provider parsers live in app/services/providers/ (one module each, chosen by
the session's `provider`); `parse_line` here is the Claude one, kept under its
old name together with the event kinds.
"""
from app.services.claude_lines import summarise_system
from app.services.event_types import ASSISTANT
from app.services.event_types import IGNORED
from app.services.event_types import RESULT
from app.services.event_types import SYSTEM
from app.services.event_types import TOOL_RESULTS
from app.services.event_types import TURN_STARTED
from app.services.event_types import StreamEvent
from app.services.json_depth import MAX_DEPTH
from app.services.providers.claude import parse_line

__all__ = [
    "ASSISTANT",
    "IGNORED",
    "MAX_DEPTH",
    "RESULT",
    "SYSTEM",
    "TOOL_RESULTS",
    "TURN_STARTED",
    "StreamEvent",
    "parse_line",
    "summarise_system",
]
