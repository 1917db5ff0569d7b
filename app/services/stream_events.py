"""Parse one stdout line of an agent into a `StreamEvent`.

Understands Claude Code `stream-json` (system, assistant, user, result; see
claude_lines.py) and the OpenAI-style `{"type": "message", "role": "assistant",
...}` line (openai_lines.py). Anything else, including text that is not JSON or
JSON nested too deep to handle safely, becomes an `ignored` event: the raw line
stays in the output buffer, but it never touches a turn. A lone surrogate in a
decoded string ("\\ud800") becomes U+FFFD, so every event's text can be stored.
"""
import json

from app.services.claude_lines import parse_assistant
from app.services.claude_lines import parse_result
from app.services.claude_lines import parse_system
from app.services.claude_lines import parse_user
from app.services.claude_lines import summarise_system
from app.services.event_types import ASSISTANT
from app.services.event_types import IGNORED
from app.services.event_types import RESULT
from app.services.event_types import SYSTEM
from app.services.event_types import TOOL_RESULTS
from app.services.event_types import StreamEvent
from app.services.event_types import ignored
from app.services.json_depth import MAX_DEPTH
from app.services.json_depth import too_deep
from app.services.openai_lines import parse_openai_message
from app.services.surrogates import may_hold_lone_surrogates
from app.services.surrogates import replace_in_json

__all__ = [
    "ASSISTANT",
    "IGNORED",
    "MAX_DEPTH",
    "RESULT",
    "SYSTEM",
    "TOOL_RESULTS",
    "StreamEvent",
    "parse_line",
    "summarise_system",
]

_PARSERS = {
    "assistant": parse_assistant,
    "message": parse_openai_message,
    "user": parse_user,
    "result": parse_result,
    "system": parse_system,
}


def parse_line(line):
    """Turn one raw stdout line into a `StreamEvent`; never raises."""
    try:
        obj = json.loads(line)
    except (TypeError, ValueError):
        return ignored("not_json")
    except RecursionError:
        return ignored("too_deep")
    if not isinstance(obj, dict):
        return ignored("not_an_object")
    if _may_be_deep(line) and too_deep(obj):
        return ignored("too_deep")
    if may_hold_lone_surrogates(line):  # text that UTF-8 storage would refuse
        obj = replace_in_json(obj)
    kind = obj.get("type")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        return ignored("unknown_type")
    return parser(obj)


def _may_be_deep(line):
    """Cheap pre-check: a line with few brackets cannot nest deeply."""
    if not isinstance(line, str):
        return True
    return line.count("{") + line.count("[") > MAX_DEPTH
