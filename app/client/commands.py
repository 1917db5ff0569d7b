"""`turnlog run` and `turnlog follow`: click commands that need a server URL and a token only."""
import os
import sys
from pathlib import Path

import click

from app.client.errors import ApiError
from app.client.errors import Unreachable
from app.client.http import Client
from app.client.render import Renderer
from app.client.runner import RunRequest
from app.client.runner import run as run_command

PROVIDERS = ("claude", "codex", "gemini")
SESSION_TYPES = ("chat", "agent", "terminal", "workflow")


def default_spool():
    """$TURNLOG_SPOOL, else turnlog/spool in the XDG state folder."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return str(Path(state) / "turnlog" / "spool")


server_option = click.option("--server", envvar="TURNLOG_SERVER", required=True,
                             help="the turnlog server's URL (or TURNLOG_SERVER)")
token_option = click.option("--token", envvar="TURNLOG_TOKEN", required=True,
                            help="a bearer token (or TURNLOG_TOKEN)")


@click.command("run", context_settings={"allow_interspersed_args": False,
                                        "ignore_unknown_options": True})
@server_option
@token_option
@click.option("--session-type", type=click.Choice(SESSION_TYPES), default=None,
              help="agent by default; workflow when --workflow-id is given")
@click.option("--workflow-id", default=None, help="the workflow this session belongs to")
@click.option("--provider", type=click.Choice(PROVIDERS), default="claude",
              help="whose stream-json the command prints")
@click.option("--user", "user_id", default=None, help="the session's owner (a runner token's user)")
@click.option("--session", "session_id", default=None,
              help="continue this session from its spool (after a crash)")
@click.option("--spool", "spool_dir", envvar="TURNLOG_SPOOL", default=default_spool,
              help="where the durable spool files live (or TURNLOG_SPOOL)")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(server, token, session_type, workflow_id, provider, user_id, session_id, spool_dir, command):
    """Run COMMAND, posting its stdout and stderr lines to a session; exit with its code.

    Write `--` before the command: turnlog run --server URL --token T -- claude -p ...
    """
    if workflow_id and session_type not in (None, "workflow"):
        raise click.UsageError("--workflow-id goes with --session-type workflow")
    request = RunRequest(
        command=command, spool_dir=spool_dir, provider=provider, user_id=user_id,
        session_type=session_type or ("workflow" if workflow_id else "agent"),
        context={"workflow_id": workflow_id} if workflow_id else None, session_id=session_id)
    sys.exit(run_command(Client(server, token), request))


@click.command("follow")
@server_option
@token_option
@click.option("--raw", is_flag=True, help="print the raw output lines instead")
@click.argument("session_id")
def follow(server, token, raw, session_id):
    """Print a session's transcript live, resuming after dropped connections."""
    def out(text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def err(text):
        sys.stderr.write(text)
        sys.stderr.flush()

    renderer = Renderer(out, err, raw=raw)
    try:
        for event in Client(server, token).follow(session_id, raw=raw):
            renderer.handle(event)
    except ApiError as error:
        raise click.ClickException(f"{error.status} {error.code}: {error.message}") from None
    except Unreachable as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        sys.exit(130)
