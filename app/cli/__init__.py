"""Operator commands on `flask --app wsgi ...`: the database (db-upgrade, db-status,
prune-outputs), tokens (create-runner-token, create-user-token, list-tokens,
revoke-token), sessions (assign-machine) and the first-run demo.

Every command is made with `app.cli.command.operator_command`, so it runs in an app
context however it is invoked (`flask`, or `app.test_cli_runner()`), and a bad option
or a refused operation ends in one `Error:` line, never a traceback.
"""
from app.cli import database
from app.cli import demo
from app.cli import sessions
from app.cli import tokens

COMMANDS = (
    database.db_upgrade,
    database.db_status,
    database.prune_outputs,
    demo.demo,
    tokens.create_runner_token,
    tokens.create_user_token,
    tokens.list_tokens,
    tokens.revoke_token,
    sessions.assign_machine,
)


def init_app(app):
    """Register the operator commands on `app.cli`."""
    for command in COMMANDS:
        app.cli.add_command(command)
