"""PostgreSQL's LISTEN for the live hub: another instance's commits wake this one's
followers at once instead of at the next poll.

Migration 0013 makes every change of a session's buffer or status NOTIFY channel
`turnlog_live` with the session id. `listen` holds one connection of its own (not
one of the pool's: it is kept as long as the process follows streams), LISTENs, and
calls `on_notify(session_id)` for each notification. A lost connection is made again
after `retry_seconds`; the hub's poll covers what arrives meanwhile. Under gevent,
psycopg waits on the socket cooperatively, so the listener costs no thread.
"""
import logging
import time

log = logging.getLogger(__name__)
CHANNEL = "turnlog_live"
# Migration 0025: a new command of a session (its runner waits for it).
COMMANDS_CHANNEL = "turnlog_commands"
LISTEN = f"LISTEN {CHANNEL}"
# How long one wait for notifications lasts before `stop()` is asked again (so the
# connection closes within about this long after the last follower leaves).
WAIT_SECONDS = 1.0


def supported(engine):
    """True where the database can notify (PostgreSQL)."""
    return engine.dialect.name == "postgresql"


def connect(engine):
    """A new autocommit driver connection with the engine's own URL and options."""
    args, kwargs = engine.dialect.create_connect_args(engine.url)
    conn = engine.dialect.connect(*args, **kwargs)
    conn.autocommit = True
    return conn


def listen(engine, on_notify, *, stop=lambda: False, retry_seconds=1.0, on_listening=None,
           channel=CHANNEL):
    """LISTEN on `engine`'s database (on `channel`) until `stop()` is true, calling
    `on_notify` with each notification's session id; `on_listening()` once each time it
    (re)connects."""
    while not stop():
        conn = None
        try:
            conn = connect(engine)
            conn.execute(f"LISTEN {channel}")
            if on_listening is not None:
                on_listening()
            while not stop():
                for notify in conn.notifies(timeout=WAIT_SECONDS):
                    on_notify(notify.payload)
        except Exception:  # the database restarts or is unreachable a while
            log.warning("live notifications: listening failed; again in %.1f s",
                        retry_seconds, exc_info=True)
            time.sleep(retry_seconds)
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # already broken
                    pass
