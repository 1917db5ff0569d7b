"""create-runner-token, create-user-token, list-tokens and revoke-token."""
import click

from app import db
from app.cli.command import operator_command
from app.core.clock import to_iso
from app.core.clock import utc_now
from app.services import tokens
from app.services.access import RUNNER
from app.services.access import USER


class Duration(click.ParamType):
    """Seconds, or a number with s, m, h or d: 90m, 12h, 30d."""

    name = "duration"
    UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value, param, ctx):
        text = str(value).strip().lower()
        unit = self.UNITS.get(text[-1:], None)
        number = text[:-1] if unit else text
        try:
            seconds = int(number) * (unit or 1)
        except ValueError:
            self.fail(f"{value!r} is not a duration like 3600, 90m, 12h or 30d", param, ctx)
        if seconds <= 0:
            self.fail(f"{value!r} must be longer than zero", param, ctx)
        return seconds


DURATION = Duration()


@operator_command("create-runner-token")
@click.option("--machine", required=True, help="The machine whose runner posts output.")
@click.option("--user", "users", multiple=True,
              help="A user the runner may open sessions for (repeat for more).")
@click.option("--any-user", is_flag=True, help="The runner may open sessions for any user.")
@click.option("--expires-in", type=DURATION, default=None,
              help="The token stops working after this long: 3600, 90m, 12h, 30d.")
def create_runner_token(machine, users, any_user, expires_in):
    """Print a new runner token for MACHINE (shown once; only its hash is kept).

    Say whom it serves: --user U (repeatable) for those users' sessions only, or
    --any-user explicitly.
    """
    if bool(users) == any_user:
        raise click.UsageError("give --user U (one or more) or --any-user, not both and not neither:"
                               " a runner token is scoped to the users it serves")
    _print_new_token(RUNNER, machine, is_admin=False, users=None if any_user else users,
                     expires_in=expires_in)


@operator_command("create-user-token")
@click.option("--user", required=True, help="The user who reads their sessions with it.")
@click.option("--admin", is_flag=True, help="The token reads every session.")
@click.option("--expires-in", type=DURATION, default=None,
              help="The token stops working after this long: 3600, 90m, 12h, 30d.")
def create_user_token(user, admin, expires_in):
    """Print a new user token for USER (shown once; only its hash is kept)."""
    _print_new_token(USER, user, is_admin=admin, expires_in=expires_in)


@operator_command("list-tokens")
def list_tokens():
    """Every token ever issued, one per line, tab-separated (never the secret):
    id, kind, name, admin, scope, created, expires, state. A session's own write
    token (kind `session`) follows the runner token that opened its session."""
    click.echo("id\tkind\tname\tadmin\tscope\tcreated\texpires\tstate")
    listing = tokens.list_tokens(db.reading())
    by_id = {token.id: token for token in listing}
    now = to_iso(utc_now())
    for token in listing:
        admin = "admin" if token.is_admin else "-"
        click.echo(f"{token.id}\t{_kind(token, by_id)}\t{token.name}\t{admin}\t{_scope(token)}"
                   f"\t{token.created_at}\t{token.expires_at or 'never'}"
                   f"\t{_state(token, by_id.get(token.parent_id), now)}")


def _kind(token, by_id):
    if token.session_id is None:
        return token.kind
    return "└ session" if token.parent_id in by_id else "session"


def _state(token, parent, now):
    if token.revoked_at:
        return "revoked " + token.revoked_at
    if tokens.stopped_by_parent(token, parent, now):
        return f"stopped with token {parent.id}"
    return "active"


def _scope(token):
    if token.kind != RUNNER:
        return "own sessions" if not token.is_admin else "every session"
    if token.session_id is not None:
        return f"session {token.session_id}"
    if token.allowed_users is None:
        return "any user"
    return "users " + ",".join(token.allowed_users)


@operator_command("revoke-token")
@click.argument("token_id", type=int)
def revoke_token(token_id):
    """Revoke token TOKEN_ID (see list-tokens); it stops working at once."""
    if not tokens.revoke(token_id, db.writing()):
        raise click.ClickException(f"no active token with id {token_id}")
    click.echo(f"revoked token {token_id}")


def _print_new_token(kind, name, *, is_admin, users=None, expires_in=None):
    token_id, secret = tokens.issue(kind, name, db.writing(), is_admin=is_admin, users=users,
                                    expires_in=expires_in)
    click.echo(secret)
    click.echo(f"token id {token_id} ({kind} {name.strip()!r}); it is not shown again", err=True)
