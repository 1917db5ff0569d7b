"""Whether the parsers know every line a capture holds: a line whose type (or Codex item
kind, Claude content block or Claude `system` subtype) no parser handles is a format change
to look at. Used by
tests/unit/test_captures.py on the committed captures and by `capture.py --check` on
fresh ones."""
import json
from pathlib import Path

from app.providers import claude
from app.providers import claude_notes
from app.providers import codex
from app.providers import gemini
from app.transcript.event_types import IGNORED

PARSE = {"claude": claude.parse_line, "codex": codex.parse_line, "gemini": gemini.parse_line}
# Reasons a parser gives for a line it could not read at all (others are deliberate skips).
UNKNOWN = {"unknown_type", "unknown_item", "not_json", "not_an_object", "too_deep"}
# Claude's parser reads every `system` line, whatever its subtype: a note for the subtypes
# claude_notes summarises, else the line's own message text or nothing. These are the
# subtypes looked at and found to say nothing to a reader (seen in the captures); any other
# is reported, so a new one is looked at the day it appears.
CLAUDE_QUIET_SYSTEM = frozenset({"status", "thinking_tokens", "task_started", "task_updated",
                                 "background_tasks_changed"})
CLAUDE_SYSTEM = frozenset(claude_notes.SUMMARIES) | CLAUDE_QUIET_SYSTEM


def cli_of(folder):
    """The CLI a capture folder (<cli>-<version>) holds."""
    return Path(folder).name.rsplit("-", 1)[0]


def unknown_lines(path):
    """[(line number, what is unknown)] of capture file `path`."""
    cli = cli_of(Path(path).parent)
    found = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        event = PARSE[cli](line)
        reason = event.info.get("reason") if event.kind == IGNORED else None
        if reason in UNKNOWN:
            found.append((number, f"{reason}: {line[:120]}"))
        elif cli == "claude":
            found += [(number, f"content block {kind}") for kind in _claude_blocks(line)
                      if kind not in claude.ASSISTANT_BLOCK_TYPES]
            found += [(number, f"system subtype {kind}") for kind in _claude_system(line)
                      if kind not in CLAUDE_SYSTEM]
    return found


def _claude_system(line):
    obj = json.loads(line)
    return [obj.get("subtype")] if obj.get("type") == "system" else []


def _claude_blocks(line):
    obj = json.loads(line)
    message = obj.get("message") if obj.get("type") == "assistant" else None
    content = message.get("content") if isinstance(message, dict) else None
    return [block.get("type") for block in content or [] if isinstance(block, dict)]


def unknown_in(folder):
    """{file name: unknown lines} for every capture file under `folder` that has any."""
    found = {}
    for path in sorted(Path(folder).glob("*/*.jsonl")):
        if lines := unknown_lines(path):
            found[f"{path.parent.name}/{path.name}"] = lines
    return found
