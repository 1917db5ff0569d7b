"""What every provider's line parser does first: one stdout line -> a JSON object.

Text that is not JSON, JSON that is not an object, or JSON nested too deep to
handle safely becomes an `ignored` event instead: the raw line stays in the
output buffer, but it never touches a turn. A lone surrogate in a decoded
string ("\\ud800") becomes U+FFFD, so every event's text can be stored.
"""
from dataclasses import replace

from app.formats import fast_json
from app.providers.json_depth import MAX_DEPTH
from app.providers.json_depth import too_deep
from app.providers.surrogates import may_hold_unstorable
from app.providers.surrogates import replace_in_json
from app.transcript.event_types import ignored


def parse_with(line, parsers, untyped=None, identify=None):
    """Decode `line` and hand it to the parser its `type` names (an object with no
    `type` to `untyped`, when given); never raises. `identify(obj, line)`, when
    given, names the event's line (None: it has no id of its own)."""
    obj = decode(line)
    if not isinstance(obj, dict):
        return obj
    kind = obj.get("type")
    if kind is None and untyped is not None:
        event = untyped(obj)
    else:
        parser = parsers.get(kind) if isinstance(kind, str) else None
        event = parser(obj) if parser is not None else ignored("unknown_type")
    identity = identify(obj, line) if identify is not None else None
    return replace(event, identity=identity) if identity else event


def decode(line):
    """The line's JSON object, or an `ignored` event saying why there is none."""
    try:
        obj = fast_json.loads(line)  # json.loads' value and errors, mostly faster
    except (TypeError, ValueError):
        return ignored("not_json")
    except RecursionError:
        return ignored("too_deep")
    if not isinstance(obj, dict):
        return ignored("not_an_object")
    if _may_be_deep(line) and too_deep(obj):
        return ignored("too_deep")
    if may_hold_unstorable(line):  # text that UTF-8 storage would refuse
        obj = replace_in_json(obj)
    return obj


def text_of(value):
    """`value` when it is a string, else ""."""
    return value if isinstance(value, str) else ""


def _may_be_deep(line):
    """Cheap pre-check: a line with few brackets cannot nest deeply."""
    if not isinstance(line, str):
        return True
    return line.count("{") + line.count("[") > MAX_DEPTH
