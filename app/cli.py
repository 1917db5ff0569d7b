"""Operator commands: `flask --app wsgi db-upgrade | db-status | demo`."""
import json
from importlib import resources

import click
from flask import current_app

from app import db
from app import schemas
from app.extensions import db as sqla
from app.services import ingest
from app.services import migrations
from app.services import sessions
from app.services import streaming
from app.services.models import Chunk

DEMO_BATCH = 50


def init_app(app):
    """Register the operator commands on `app.cli`."""
    app.cli.add_command(db_upgrade)
    app.cli.add_command(db_status)
    app.cli.add_command(demo)
    app.cli.add_command(prune_outputs)


@click.command("db-upgrade")
def db_upgrade():
    """Apply pending migrations in order (a no-op when none are pending)."""
    try:
        applied = migrations.upgrade(sqla.engine, db.migrations_dir())
    except migrations.MigrationError as err:
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
    except migrations.MigrationError as err:
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


@click.command("demo")
@click.option("--sample", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A stream-json file to ingest instead of the bundled sample.")
@click.option("--session-type", default="agent", show_default=True)
def demo(sample, session_type):
    """Migrate, ingest a Claude stream-json sample into a new session, print it."""
    migrations.upgrade(sqla.engine, db.migrations_dir())
    if sample:
        with open(sample, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    else:
        text = resources.files("app.samples").joinpath("claude_session.jsonl").read_text("utf-8")
        lines = text.splitlines()
    session = sessions.open_session({"session_type": session_type}, db.writing())
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
