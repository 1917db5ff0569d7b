"""create-runner-token, create-user-token, list-tokens and revoke-token."""
import click

from app import db
from app.cli.command import operator_command
from app.services import tokens
from app.services.access import RUNNER
from app.services.access import USER


@operator_command("create-runner-token")
@click.option("--machine", required=True, help="The machine whose runner posts output.")
def create_runner_token(machine):
    """Print a new runner token for MACHINE (shown once; only its hash is kept)."""
    _print_new_token(RUNNER, machine, is_admin=False)


@operator_command("create-user-token")
@click.option("--user", required=True, help="The user who reads their sessions with it.")
@click.option("--admin", is_flag=True, help="The token reads every session.")
def create_user_token(user, admin):
    """Print a new user token for USER (shown once; only its hash is kept)."""
    _print_new_token(USER, user, is_admin=admin)


@operator_command("list-tokens")
def list_tokens():
    """Every token ever issued: id, kind, name, admin, created, revoked (never the secret)."""
    for token in tokens.list_tokens(db.reading()):
        admin = "admin" if token.is_admin else "-"
        click.echo(f"{token.id}\t{token.kind}\t{token.name}\t{admin}\t{token.created_at}"
                   f"\t{token.revoked_at or 'active'}")


@operator_command("revoke-token")
@click.argument("token_id", type=int)
def revoke_token(token_id):
    """Revoke token TOKEN_ID (see list-tokens); it stops working at once."""
    if not tokens.revoke(token_id, db.writing()):
        raise click.ClickException(f"no active token with id {token_id}")
    click.echo(f"revoked token {token_id}")


def _print_new_token(kind, name, *, is_admin):
    token_id, secret = tokens.issue(kind, name, db.writing(), is_admin=is_admin)
    click.echo(secret)
    click.echo(f"token id {token_id} ({kind} {name.strip()!r}); it is not shown again", err=True)
