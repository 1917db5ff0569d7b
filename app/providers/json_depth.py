"""How deep a decoded JSON value nests, checked without recursion."""

# Deepest nesting of lists/objects turnlog accepts in data it stores. Python's
# json recursion runs into the interpreter's recursion limit near 1000 levels,
# so a value nested close to that can be decoded in one place and still fail
# later, deeper in the stack (stored, read back, dumped in a response). No
# real agent line or session context comes close to this bound.
MAX_DEPTH = 200


def too_deep(value, limit=MAX_DEPTH):
    """True when lists/dicts in `value` nest more than `limit` levels."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return False
