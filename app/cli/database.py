"""db-upgrade, db-status and prune-outputs: the schema and the live output buffer."""
import logging

import click

from app import db
from app.cli.command import operator_command
from app.extensions import db as sqla
from app.services import streaming
from app.storage import migrations

log = logging.getLogger(__name__)


@operator_command("db-upgrade")
def db_upgrade():
    """Apply pending migrations in order (a no-op when none are pending)."""
    applied = db.upgrade(sqla.engine, db.migrations_dir())
    for migration in applied:
        click.echo(f"applied {migration.version:04d}_{migration.name}")
    if not applied:
        click.echo("database is up to date")


@operator_command("db-status")
def db_status():
    """List applied and pending migrations."""
    applied, pending = migrations.status(sqla.engine, db.migrations_dir())
    for version, (name, applied_at) in sorted(applied.items()):
        click.echo(f"applied  {version:04d}_{name}  {applied_at}")
    for migration in pending:
        click.echo(f"pending  {migration.version:04d}_{migration.name}")


@operator_command("prune-outputs")
@click.option("--batch-size", default=5000, show_default=True, type=click.IntRange(min=1),
              help="Rows deleted per transaction; ingestion runs between batches.")
def prune_outputs(batch_size):
    """Delete expired rows from the live output buffer (the transcript is kept)."""
    deleted = streaming.prune_outputs(db.detached_units_of_work(), batch_size=batch_size)
    log.info("pruned %d expired output rows", deleted)
    click.echo(f"deleted {deleted} expired output rows")
