"""Operator commands: `flask --app wsgi db-upgrade | db-status | demo | prune-outputs`,
the token commands `create-runner-token | create-user-token | list-tokens | revoke-token`,
and `assign-machine`."""
import json
from importlib import resources

import click
from flask import current_app

from app import db
from app import schemas
from app.extensions import db as sqla
from app.services import ingest
from app.services import sessions
from app.services import streaming
from app.services import tokens
from app.services.access import RUNNER
from app.services.access import USER
from app.services.errors import InvalidMachine
from app.services.errors import InvalidTokenName
from app.services.errors import MigrationError
from app.services.errors import SessionNotFound
from app.services.models import Chunk
from app.storage import migrations

DEMO_BATCH = 50


def init_app(app):
    """Register the operator commands on `app.cli`."""
    app.cli.add_command(db_upgrade)
    app.cli.add_command(db_status)
    app.cli.add_command(demo)
    app.cli.add_command(prune_outputs)
    app.cli.add_command(create_runner_token)
    app.cli.add_command(create_user_token)
    app.cli.add_command(list_tokens)
    app.cli.add_command(revoke_token)
    app.cli.add_command(assign_machine)


@click.command("db-upgrade")
def db_upgrade():
    """Apply pending migrations in order (a no-op when none are pending)."""
    try:
        applied = migrations.upgrade(sqla.engine, db.migrations_dir())
    except MigrationError as err:
        raise click.ClickException(str(err)) from None
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        click.echo("database is up to date")


@click.command("db-status")
def db_status():
    """List applied and pending migrations."""
    try:
        applied, pending = migrations.status(sqla.engine, db.migrations_dir())
    except MigrationError as err:
        raise click.ClickException(str(err)) from None
    for version, (name, applied_at) in sorted(applied.items()):
        click.echo(f"applied  {version:04d}_{name}  {applied_at}")
    for migration in pending:
        click.echo(f"pending  {migration.version:04d}_{migration.name}")


@click.command("prune-outputs")
@click.option("--batch-size", default=5000, show_default=True,
              help="Rows deleted per transaction; ingestion runs between batches.")
def prune_outputs(batch_size):
    """Delete expired rows from the live output buffer (the transcript is kept)."""
    deleted = streaming.prune_outputs(db.detached_units_of_work(), batch_size=batch_size)
    click.echo(f"deleted {deleted} expired output rows")


@click.command("create-runner-token")
@click.option("--machine", required=True, help="The machine whose runner posts output.")
def create_runner_token(machine):
    """Print a new runner token for MACHINE (shown once; only its hash is kept)."""
    _print_new_token(RUNNER, machine, is_admin=False)


@click.command("create-user-token")
@click.option("--user", required=True, help="The user who reads their sessions with it.")
@click.option("--admin", is_flag=True, help="The token reads every session.")
def create_user_token(user, admin):
    """Print a new user token for USER (shown once; only its hash is kept)."""
    _print_new_token(USER, user, is_admin=admin)


@click.command("list-tokens")
def list_tokens():
    """Every token ever issued: id, kind, name, admin, created, revoked (never the secret)."""
    for token in tokens.list_tokens(db.reading()):
        admin = "admin" if token.is_admin else "-"
        click.echo(f"{token.id}\t{token.kind}\t{token.name}\t{admin}\t{token.created_at}"
                   f"\t{token.revoked_at or 'active'}")


@click.command("revoke-token")
@click.argument("token_id", type=int)
def revoke_token(token_id):
    """Revoke token TOKEN_ID (see list-tokens); it stops working at once."""
    if not tokens.revoke(token_id, db.writing()):
        raise click.ClickException(f"no active token with id {token_id}")
    click.echo(f"revoked token {token_id}")


@click.command("assign-machine")
@click.argument("session_id")
@click.option("--machine", required=True, help="The machine whose runner tokens may write it.")
def assign_machine(session_id, machine):
    """Let MACHINE's runner tokens write session SESSION_ID (a session with no
    machine, e.g. one from before migration 0008, refuses every runner)."""
    try:
        previous, session = sessions.assign_machine(session_id, machine, db.writing())
    except (SessionNotFound, InvalidMachine) as err:
        raise click.ClickException(err.message) from None
    was = "no machine" if previous is None else f"machine {previous!r}"
    click.echo(f"session {session.session_id} ({session.status}) assigned to machine"
               f" {session.machine!r}; it had {was}")


def _print_new_token(kind, name, *, is_admin):
    try:
        token_id, secret = tokens.issue(kind, name, db.writing(), is_admin=is_admin)
    except InvalidTokenName as err:
        raise click.ClickException(err.message) from None
    click.echo(secret)
    click.echo(f"token id {token_id} ({kind} {name.strip()!r}); it is not shown again", err=True)


@click.command("demo")
@click.option("--sample", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A stream-json file to ingest instead of the bundled sample.")
@click.option("--session-type", default="agent", show_default=True)
@click.option("--user", default="demo", show_default=True, help="The session's owner.")
def demo(sample, session_type, user):
    """Migrate, ingest a Claude stream-json sample into a new session, print it.

    With authentication on (the default) it also prints a new user token for the
    owner, to read the session with.
    """
    migrations.upgrade(sqla.engine, db.migrations_dir())
    if sample:
        with open(sample, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    else:
        text = resources.files("app.samples").joinpath("claude_session.jsonl").read_text("utf-8")
        lines = text.splitlines()
    session = sessions.open_session({"session_type": session_type, "user_id": user,
                                     "machine": "demo"}, db.writing())
    sid = session.session_id
    retention = current_app.config["OUTPUT_RETENTION_SECONDS"]
    for start in range(0, len(lines), DEMO_BATCH):
        batch = [Chunk(line, "stdout", start + i) for i, line in enumerate(lines[start:start + DEMO_BATCH])]
        ingest.ingest_output(sid, batch, db.writing(), retention_seconds=retention)
    ingest.complete_session(sid, 0, db.writing())
    payload = {"session": schemas.session_schema.dump(sessions.get_session(sid, db.reading()))}
    click.echo(json.dumps(payload, indent=2))
    click.echo(f"\ningested {len(lines)} lines into session {sid}")
    click.echo(f"GET http://127.0.0.1:8000/api/remote/sessions/{sid}")
    click.echo(f"viewer: http://127.0.0.1:8000/sessions/{sid}")
    if current_app.config["AUTH_DISABLED"]:
        click.echo("authentication is off (AUTH_DISABLED): no token needed")
    else:
        _, secret = tokens.issue(USER, user, db.writing())
        click.echo(f"user token for {user!r} (sign in to the viewer, or send"
                   f" `Authorization: Bearer <token>`): {secret}")
