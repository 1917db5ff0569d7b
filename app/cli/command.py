"""How every operator command is built: in an app context, with one-line errors."""
import click
from flask.cli import with_appcontext
from sqlalchemy.exc import DBAPIError

from app.core.errors import ServiceError


class OperatorCommand(click.Command):
    """A click command whose failures are one `Error: ...` line (exit status 2 for a bad
    option, 1 for a refused operation) instead of a usage block or a traceback."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as err:
            if err.ctx is None:
                raise
            # Without its context click prints the message alone, not the usage block.
            hint = f"see `{err.ctx.command_path} --help`"
            raise click.UsageError(f"{err.format_message()} ({hint})") from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ServiceError as err:
            raise click.ClickException(err.message) from None
        except DBAPIError as err:
            # e.g. a database URL that cannot be opened, or a lock that never came
            raise click.ClickException(f"database error: {_first_line(err.orig)}") from None


def operator_command(name):
    """`click.command(name)` for an operator command: an app context is pushed for it
    (add_command does not do that for a plain click command) and errors are one line."""
    def decorate(function):
        return click.command(name, cls=OperatorCommand)(with_appcontext(function))
    return decorate


def _first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
