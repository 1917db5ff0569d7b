"""The one rule for showing a tool result's `content` as text.

A tool_result's content is a string, a list of content parts, or (from some
providers) any other JSON value. The rule, everywhere a result is shown or
exported: a string is itself; in a list, each text part is its `text` and any
other part is its JSON, one per line; no content is ""; anything else is its JSON.
Nothing is dropped, so an image or a structured part still shows as data.

JSON is indented two spaces a level, but a value nesting deeper than INDENTED_DEPTH
is written on one line: indentation repeats on every line below a level, so a
value nested 150 deep would grow a hundred and fifty times over.
"""
import json

from app.providers.json_depth import too_deep

INDENTED_DEPTH = 8


def tool_result_text(content):
    """`content` of a tool_result block as text, by the rule above."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(part) for part in content)
    return _json(content)


def _part_text(part):
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return part["text"]
    return _json(part)


def _json(value):
    indent = None if too_deep(value, INDENTED_DEPTH) else 2
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
