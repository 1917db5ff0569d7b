"""Claude Code `stream-json` lines (and the OpenAI-shaped `message` line) as `StreamEvent`s.

The line parsers themselves live in claude_lines.py and openai_lines.py; this
module is the provider's entry point in the registry.
"""
from app.services.claude_lines import parse_assistant
from app.services.claude_lines import parse_result
from app.services.claude_lines import parse_system
from app.services.claude_lines import parse_user
from app.services.event_types import ignored
from app.services.openai_lines import parse_openai_message
from app.services.providers.decode import parse_with

PARSERS = {
    "assistant": parse_assistant,
    "message": parse_openai_message,
    "user": parse_user,
    "result": parse_result,
    "system": parse_system,
    # `--include-partial-messages`: the raw API stream events (message_start,
    # content_block_delta with text/thinking/input_json deltas, ...). The complete
    # `assistant` line that follows carries the same blocks whole, so reading the
    # deltas too would double the text; they stay in the buffer for live viewers.
    "stream_event": lambda obj: ignored("partial_message"),
}


def parse_line(line):
    """Turn one raw Claude stdout line into a `StreamEvent`; never raises."""
    return parse_with(line, PARSERS)
