"""Session ids: the UUIDs the server gives, and nothing else, since one names a spool file."""
import re

# A fixed-length pattern: it cannot backtrack, and nothing it matches holds `/` or `..`.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_session_id(value):
    """True for a UUID in its usual 36-character text form."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None
