"""Whether a running session still has a runner behind it.

A runner shows it is there by what it writes (each batch of output moves the session's
`updated_at`) and, while the agent prints nothing, by its heartbeat (`runner_seen_at`,
POST .../runner). A session `running` whose runner has done neither for longer than
RUNNER_STALE_SECONDS is `stale`: derived when read, never stored, so a runner that comes
back (a resumed spool) makes it running again with its next line.
"""
from datetime import timedelta

from app.core.clock import from_iso

STALE = "stale"


def last_sign(session):
    """The stamp of the runner's last sign of life: its last write or heartbeat."""
    stamps = [s for s in (session.updated_at, session.runner_seen_at) if s]
    return max(stamps) if stamps else None  # ISO text: text order is time order


def is_stale(session, now, stale_seconds):
    """True when `session` is running and its runner has been silent over `stale_seconds`."""
    if session.status != "running":
        return False
    last = last_sign(session)
    return last is not None and now - from_iso(last) > timedelta(seconds=stale_seconds)


def shown_status(session):
    """The status a person is shown: `stale` for a stale running session."""
    return STALE if getattr(session, "stale", False) else session.status
