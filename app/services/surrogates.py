"""Lone UTF-16 surrogates: legal in a JSON string ("\\ud800"), not storable as UTF-8.

SQLite (and PostgreSQL) store text as UTF-8, which has no encoding for a lone
surrogate, so one reaching the database fails the whole write. Where text must
be kept whatever it holds, each lone surrogate becomes U+FFFD.
"""
import re

LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A raw JSON line that might decode to a lone surrogate: a \\uD800-\\uDFFF escape,
# or a surrogate already in the text. (A valid escaped pair also matches; that
# only costs a walk that changes nothing.)
MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def has_lone_surrogate(text):
    """True when `text` holds a code point UTF-8 cannot encode."""
    return LONE_SURROGATE.search(text) is not None


def replace_lone_surrogates(text):
    """`text` with each lone surrogate replaced by U+FFFD."""
    return LONE_SURROGATE.sub(REPLACEMENT, text)


def may_hold_lone_surrogates(line):
    """Cheap pre-check on a raw JSON line before walking what it decoded to."""
    return not isinstance(line, str) or MAYBE_SURROGATE.search(line) is not None


def replace_in_json(value):
    """A decoded JSON value with lone surrogates replaced in every string (keys too).

    Lists and dicts are fixed in place, without recursion; the value is returned.
    """
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            for index, child in enumerate(item):
                if isinstance(child, str):
                    item[index] = replace_lone_surrogates(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
        elif isinstance(item, dict):
            if any(isinstance(key, str) and has_lone_surrogate(key) for key in item):
                fixed = {replace_lone_surrogates(key): child for key, child in item.items()}
                item.clear()
                item.update(fixed)
            for key, child in item.items():
                if isinstance(child, str):
                    item[key] = replace_lone_surrogates(child)
                elif isinstance(child, (dict, list)):
                    stack.append(child)
    return value
