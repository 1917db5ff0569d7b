"""What the control views share: the process's command bell, the settings, framing."""
import threading

from flask import current_app

from app import db
from app.services import commands
from app.services import control
from app.storage import live_notify
from app.streaming import sse

BELL_KEY = "turnlog_command_bell"
_bell_lock = threading.Lock()


def bell():
    """The command bell of this app in this process, made on first use (after the fork);
    on PostgreSQL it listens for the commands other instances queue, on SQLite it polls
    for those the host's other worker processes queue (COMMAND_WATCH_SECONDS)."""
    app = current_app._get_current_object()
    with _bell_lock:
        if BELL_KEY not in app.extensions:
            listen = db.notification_listener(live_notify.COMMANDS_CHANNEL)
            if listen is None:
                listen = commands.polling_listener(_moved_reader(db.detached_units_of_work()),
                                                   app.config["COMMAND_WATCH_SECONDS"])
            app.extensions[BELL_KEY] = commands.CommandBell(listen=listen)
        return app.extensions[BELL_KEY]


def _moved_reader(new_uow):
    def read_moved(after):
        with new_uow() as uow:
            return uow.commands.moved_after(after)

    return read_moved


def ring(session_id):
    """Wake this process's runners waiting on `session_id` (after a commit)."""
    bell().ring(session_id)


def settings():
    config = current_app.config
    return control.Settings(attached_seconds=config["RUNNER_ATTACHED_SECONDS"],
                            retention_seconds=config["OUTPUT_RETENTION_SECONDS"])


def channel():
    config = current_app.config
    return commands.Channel(poll_seconds=config["COMMAND_POLL_SECONDS"],
                            heartbeat_seconds=config["RUNNER_HEARTBEAT_SECONDS"],
                            keepalive_seconds=config["STREAM_HEARTBEAT_SECONDS"],
                            settings=settings())


def command_data(command):
    """A command as the runner gets it: its body with command_id, kind and created_at."""
    return {**command.body, "command_id": command.command_id, "kind": command.kind,
            "created_at": command.created_at}


def frames(records, retry_ms):
    """SSE text: an event `command` per command (id: its command_id), keep-alive
    comments, and `end` once the session completed."""
    yield sse.retry(retry_ms)
    for record in records:
        if isinstance(record, commands.Commands):
            yield "".join(sse.event("command", command_data(c), c.command_id)
                          for c in record.commands)
        elif isinstance(record, commands.ChannelEnd):
            yield sse.event("end", {"status": record.status})
        else:
            yield sse.comment("keep-alive")
