"""A session's readable title: what it was asked or first said, and where it ran.

The title is the first prompt the runner recorded (migration 0026), else the prompt its
`context` names (`prompt`, else `title`), else the first visible text of its first
assistant row, else the command it ran (`python job.py`): two runs of one agent on two
tasks read apart, and a session that printed no text is no bare id. The model and
working directory come from its first "Session started: ..." system row, the note
each provider's init line leaves (`model=..., cwd=..., tools=...`). Pure: no Flask.
"""
import os
import re
import shlex
from dataclasses import dataclass

INIT_PREFIX = "Session started:"
CONTEXT_KEYS = ("prompt", "title")
TITLE_CHARS = 90
# A title is looked for in this many characters of a text, leading blanks left out: a
# text of a million lines of marks alone would otherwise be read line by line.
TITLE_SCAN_CHARS = 16 * 1024
# `key=value` pairs of the init note; a value runs up to the next `, key=`, so a
# path holding a comma stays whole. The note holds agent text (a model name, a
# path), so it is cut at each `, key=` by one forward scan: a word is read whole
# (possessive) from its first character only, never retried from each of them.
FIRST_FIELD = re.compile(r"(?<!\w)\w++=")
NEXT_FIELD = re.compile(r", (?=\w++=)")
# Markdown that reads as noise in a title: a heading, quote or bullet mark at the
# start of the line, and emphasis or code marks anywhere (a lone `_` in a name stays).
LEADING_MARKS = re.compile(r"^\s*(?:[#>]+|[-*+](?=\s))\s*")
INLINE_MARKS = re.compile(r"\*\*|__|`")


@dataclass(frozen=True)
class SessionTitle:
    text: str  # "" when the session has said nothing yet
    model: str | None
    cwd: str | None


def session_title(context, messages, *, prompt=None, command=None):
    """The title of a session with `context`, its recorded first `prompt` and `command`
    (a list of arguments), from its (first few) `messages`."""
    init = init_fields(messages)
    text = (one_line(prompt or "") or _prompt(context) or _first_text(messages)
            or _command_name(command))
    return SessionTitle(text, init.get("model"), init.get("cwd"))


def _command_name(command):
    """`command` as a title: its program's name (no folder) and its arguments, shortened."""
    if not command or not isinstance(command, list):
        return ""
    words = [os.path.basename(str(command[0])) or str(command[0]), *map(str, command[1:])]
    return one_line(shlex.join(words))


def init_fields(messages):
    """The fields of the first "Session started:" system row, as a dict."""
    for message in messages:
        content = message.content if isinstance(message.content, str) else ""
        if message.role == "system" and content.startswith(INIT_PREFIX):
            details = content[len(INIT_PREFIX):].strip()
            return _fields(details)
    return {}


def _fields(details):
    first = FIRST_FIELD.search(details)
    if first is None:
        return {}
    pairs = (part.partition("=") for part in NEXT_FIELD.split(details[first.start():]))
    return {key: value.strip() for key, _, value in pairs}


def one_line(text, limit=TITLE_CHARS):
    """The first non-blank line of `text` (within TITLE_SCAN_CHARS), Markdown marks
    dropped, at most `limit` chars."""
    text = text.lstrip()
    if len(text) > TITLE_SCAN_CHARS:
        text = text[:TITLE_SCAN_CHARS]
        text = text[:text.rfind("\n")] if "\n" in text else text  # whole lines only
    for line in text.splitlines():
        line = " ".join(INLINE_MARKS.sub("", LEADING_MARKS.sub("", line)).split())
        if line:
            return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"
    return ""


def _prompt(context):
    context = context if isinstance(context, dict) else {}
    for key in CONTEXT_KEYS:
        value = context.get(key)
        if isinstance(value, str) and one_line(value):
            return one_line(value)
    return ""


def _first_text(messages):
    for message in messages:
        if message.role == "assistant" and isinstance(message.content, str):
            line = one_line(message.content)
            if line:
                return line
    return ""
