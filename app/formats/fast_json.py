"""JSON text in and out through orjson, with the stdlib's result wherever the two differ.

orjson parses and writes the per-line JSON of ingest faster than the stdlib
(docs/performance.md, JSON), but it is not the same everywhere. Where it refuses a value or would
give another one, these functions hand the value to the stdlib instead, so
turnlog reads and writes what it did before:

- reading: orjson refuses lone surrogates (raw or as escapes), NaN and
  ±Infinity (1e400 too), and nesting past 1024 levels; it turns an integer
  past 64 bits into a float. (Between about 1000 and 1024 levels the stdlib
  may raise RecursionError where orjson reads the value; turnlog refuses
  anything nested past 200 levels either way: app/providers/json_depth.py.)
- writing: orjson refuses lone surrogates, non-str keys, integers past 64 bits
  and nesting past 254 levels, and writes NaN and ±Infinity as null.

Written text is compact (no spaces) and keeps non-ASCII characters as they are;
the stdlib's fallback escapes them (that is how a lone surrogate is stored).
Both are valid JSON that reads back to the same value.
"""
import json
import math

import orjson

# Every digit becomes "0": a run of 19 is an integer that may be past 64 bits
# (2**63 has 19 digits). Such a line is rare; the stdlib reads it exactly.
# Searches in bytes use find(), not `in`: `in` first tries its operand as an
# integer (a byte value) and raises and clears a TypeError on every call.
DIGITS = bytes.maketrans(b"123456789", b"000000000")
LONG_NUMBER = b"0" * 19
# Values orjson would write but the stdlib refuses, or writes otherwise (a str or
# int subclass), go to the stdlib: it raises where it raised before.
PASSTHROUGH = (orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
               | orjson.OPT_PASSTHROUGH_SUBCLASS)
stdlib_dumps = json.JSONEncoder(separators=(",", ":")).encode  # one encoder, not one per call


def loads(text):
    """The value of JSON `text` as json.loads gives it, or json.loads' error (deep
    nesting aside: see above)."""
    if type(text) is str and text.encode(
            "utf-8", "surrogatepass").translate(DIGITS).find(LONG_NUMBER) < 0:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # the stdlib reads it, or raises its own error
    return json.loads(text)


def dumps(value):
    """Compact JSON text of `value`; what json.dumps with separators=(",", ":") would
    write where orjson cannot write the same value."""
    try:
        data = orjson.dumps(value, option=PASSTHROUGH)
    except orjson.JSONEncodeError:
        return stdlib_dumps(value)
    if data.find(b"null") >= 0 and has_non_finite(value):
        return stdlib_dumps(value)  # NaN stays NaN, as turnlog has always stored it
    return data.decode()


def dumps_text(text):
    """`dumps` of a str: a JSON string literal. orjson refuses only a lone surrogate
    in one, which the stdlib escapes; a string holds no NaN to look for."""
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        return stdlib_dumps(text)


def has_non_finite(value):
    """True when a float in `value` (through dicts, lists and tuples) is NaN or infinite."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            item = item.values()
        elif kind is not list and kind is not tuple:
            if kind is float and not math.isfinite(item):
                return True
            continue
        for child in item:  # leaves are checked here, not pushed: most of them are str
            kind = type(child)
            if kind is float:
                if not math.isfinite(child):
                    return True
            elif kind is dict or kind is list or kind is tuple:
                stack.append(child)
    return False
