"""Time as ISO-8601 UTC text, the one format turnlog stores and serves."""
from datetime import datetime
from datetime import timedelta
from datetime import timezone


def utc_now():
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def to_iso(moment):
    """Fixed-width ISO-8601 with microseconds and a `Z`, so text order is time order."""
    # isoformat, not strftime: faster (docs/performance.md), and the year always has 4 digits
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")[:-6] + "Z"


def iso_after(moment, seconds):
    """`moment` plus `seconds`, as stored text."""
    return to_iso(moment + timedelta(seconds=seconds))


def from_iso(stamp):
    """Stored text back to a timezone-aware UTC time."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
