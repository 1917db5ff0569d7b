"""Characters legal in a JSON string that a database cannot store as text.

SQLite and PostgreSQL store text as UTF-8, which has no encoding for a lone
UTF-16 surrogate ("\\ud800"); PostgreSQL text also refuses NUL ("\\u0000").
One reaching the database fails the whole write. Where text must be kept
whatever it holds, each such character becomes U+FFFD (on both backends alike).
"""
import re

UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
# A raw JSON line that might decode to unstorable text: a \\uD800-\\uDFFF or
# \\u0000 escape, or such a character already in the text. (A valid escaped pair
# also matches; that only costs a walk that changes nothing.)
MAYBE_UNSTORABLE = re.compile(r"\\u(?:[dD][89a-fA-F]|0000)|[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_unstorable(text):
    """True when `text` holds a lone surrogate or a NUL."""
    return UNSTORABLE.search(text) is not None


def replace_unstorable(text):
    """`text` with each lone surrogate and NUL replaced by U+FFFD."""
    return UNSTORABLE.sub(REPLACEMENT, text)


def may_hold_unstorable(line):
    """Cheap pre-check on a raw JSON line before walking what it decoded to."""
    if not isinstance(line, str):
        return True
    if line.isascii() and "\\u" not in line and "\x00" not in line:
        return False  # most lines: no escape and no raw character to look at (C-speed scans)
    return MAYBE_UNSTORABLE.search(line) is not None


def replace_in_json(value):
    """A decoded JSON value with unstorable characters replaced in every string (keys too).

    Lists and dicts are fixed in place, without recursion; the value is returned.
    """
    if isinstance(value, str):
        return replace_unstorable(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, child in enumerate(item):
                if isinstance(child, str):
                    item[index] = replace_unstorable(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
        elif isinstance(item, dict):
            if any(isinstance(key, str) and has_unstorable(key) for key in item):
                fixed = {replace_unstorable(key): child for key, child in item.items()}
                item.clear()
                item.update(fixed)
            for key, child in item.items():
                if isinstance(child, str):
                    item[key] = replace_unstorable(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
    return value
