"""The `turnlog` console script: the operator commands of `flask --app wsgi`, plus the client.

`turnlog db-upgrade` is `flask --app wsgi db-upgrade` (a FlaskGroup over create_app);
`turnlog run`, `follow`, and the commands that drive a live session (`send`, `approve`,
`interrupt`, `stop`, `attach`) need no app, only a server URL and a token.
"""
import click
from flask.cli import FlaskGroup

from app import create_app
from app.client.commands import follow
from app.client.commands import run
from app.client.terminal import COMMANDS as DRIVING

cli = FlaskGroup(name="turnlog", create_app=create_app,
                 help="turnlog: operator commands (db-upgrade, create-runner-token, ...) and"
                      " the client (run, follow; send, approve, interrupt, stop, attach).",
                 add_version_option=False)
# turnlog's own version (FlaskGroup's option would print Python's, Flask's and Werkzeug's).
cli = click.version_option(package_name="turnlog", prog_name="turnlog",
                           message="%(prog)s %(version)s")(cli)
cli.add_command(run)
cli.add_command(follow)
for command in DRIVING:
    cli.add_command(command)


def main():
    cli.main(prog_name="turnlog")
