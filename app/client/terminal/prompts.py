"""What `turnlog attach` shows a person asked to allow a tool call, and how it reads the
answer. Pure text: no terminal, no server.

The tool's name and input come from the agent, which may print anything: every control
character (an escape sequence could redraw the terminal, or the question itself) is
shown as a visible escape, never written raw.
"""
import json
import re

QUESTION = "allow? [y/N] "
MAX_LINES = 20
MAX_LINE_CHARS = 300
# C0 controls but tab and line feed, DEL, C1 controls, and the Unicode bidi overrides
# (which reorder what a reader sees).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text):
    """`text` with every control character (ESC, CR, ...) as a `\\x..` / `\\u....` escape."""
    return _CONTROL.sub(lambda m: _escape(m.group()), str(text))


def _escape(char):
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def permission_card(permission):
    """The lines shown before the question: which tool, with what input (a shell
    command as it would run, one line per field otherwise), which request, and when it
    is denied unless answered."""
    tool = visible(permission.get("tool_name") or "a tool")
    tool_input = permission.get("input")
    lines = [f"[permission requested: {tool}]"]
    lines += [f"  {line}" for line in _input_lines(tool_input)]
    expires = permission.get("expires_at")
    tail = f"; denied at {visible(expires)} unless answered" if expires else ""
    lines.append(f"  (request {visible(permission.get('request_id', ''))}{tail})")
    return lines


def _input_lines(tool_input):
    if isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        lines = [f"$ {line}" if n == 0 else f"  {line}"
                 for n, line in enumerate(tool_input["command"].split("\n"))]
        rest = {k: v for k, v in tool_input.items() if k != "command"}
        if isinstance(rest.get("description"), str):
            lines.append(f"# {rest.pop('description')}")
        lines += _fields(rest)
    elif isinstance(tool_input, dict):
        lines = _fields(tool_input)
    else:
        lines = json.dumps(tool_input, ensure_ascii=False, indent=2).split("\n")
    return _bounded([visible(line) for line in lines])


def _fields(mapping):
    lines = []
    for key, value in mapping.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        first, *more = text.split("\n")
        lines.append(f"{key}: {first}")
        lines += [f"  {line}" for line in more]
    return lines


def _bounded(lines):
    """At most MAX_LINES lines of at most MAX_LINE_CHARS characters, saying what was cut."""
    shown = [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 3] + "..."
             for line in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        shown.append(f"... ({len(lines) - MAX_LINES} more lines)")
    return shown


def answer_of(line):
    """The behavior a typed answer means: `y` or `yes` (any case) allows; anything else,
    an empty line too, denies (the default is No)."""
    return "allow" if line.strip().lower() in ("y", "yes") else "deny"
