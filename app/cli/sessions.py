"""assign-machine: give a session to a runner's machine."""
import click

from app import db
from app.cli.command import operator_command
from app.services import sessions


@operator_command("assign-machine")
@click.argument("session_id")
@click.option("--machine", required=True, help="The machine whose runner tokens may write it.")
def assign_machine(session_id, machine):
    """Let MACHINE's runner tokens write session SESSION_ID (a session with no
    machine, e.g. one from before migration 0008, refuses every runner)."""
    previous, session = sessions.assign_machine(session_id, machine, db.writing())
    was = "no machine" if previous is None else f"machine {previous!r}"
    click.echo(f"session {session.session_id} ({session.status}) assigned to machine"
               f" {session.machine!r}; it had {was}")
