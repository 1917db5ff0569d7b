"""`turnlog send`, `approve`, `interrupt`, `stop`: drive a live session from a terminal.

Each takes the server URL and a user token as `turnlog follow` does, makes one request
(repeated after a failure only where a repeat cannot do the thing twice: app/client/terminal/calls.py),
and prints one line (`--json`: the server's answer). Exit 0 when the server took it,
1 when it refused or could not be reached (one `Error:` line saying why), 2 for a bad
command line, 125 for a --server that cannot be right.
"""
import functools
import json
import sys
import uuid

import click

from app.client.commands import ConfigurationError
from app.client.commands import check_session_id
from app.client.commands import read_token
from app.client.commands import server_option
from app.client.commands import token_options
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.http import Client
from app.client.terminal.calls import RETRY_SECONDS
from app.client.terminal.calls import answer_once
from app.client.terminal.calls import explain
from app.client.terminal.calls import resolution_text
from app.client.terminal.calls import with_retries


def with_client(command):
    """The server and token options (as `turnlog follow` takes them), read into one
    `Client` passed as `client`."""
    @functools.wraps(command)
    def wrapper(server, token, token_file, token_fd, **kwargs):
        token, _ = read_token(token, token_file, token_fd)
        return command(Client(server, token), **kwargs)

    return server_option(token_options(wrapper))


def answer_options(command):
    """`--json` and `--retry-for`."""
    command = click.option("--retry-for", type=click.FloatRange(min=0), default=RETRY_SECONDS,
                           show_default=True,
                           help="seconds to keep trying while the server is unreachable or busy"
                                " (0: try once)")(command)
    return click.option("--json", "as_json", is_flag=True,
                        help="print the server's answer as JSON")(command)


session_argument = click.argument("session_id", metavar="SESSION", callback=check_session_id)


@click.command("send")
@with_client
@answer_options
@click.option("--client-message-id", default=None,
              help="the prompt's id (default: a new one); the same id again never queues it twice")
@session_argument
@click.argument("text")
def send(client, as_json, retry_for, client_message_id, session_id, text):
    """Send TEXT to the agent of SESSION as a prompt (`-`: read it from stdin)."""
    if text == "-":
        text = sys.stdin.read()
    message_id = client_message_id or new_message_id()
    answer = _perform(session_id, lambda: client.send_message(session_id, text, message_id),
                      repeatable=True, retry_for=retry_for, as_json=as_json)
    item = answer["input"]
    waits = "" if answer.get("runner_attached") else "; no runner is attached: it waits for one"
    _say(as_json, answer, f"input {item['input_id']} {item['state']}"
                          f" (client message id {item['client_message_id']}){waits}")


@click.command("approve")
@with_client
@answer_options
@click.option("--deny", is_flag=True, help="deny the tool call instead of allowing it")
@click.option("--message", default=None, help="what the agent is told (with --deny, why)")
@session_argument
@click.argument("request_id")
def approve(client, as_json, retry_for, deny, message, session_id, request_id):
    """Allow (or --deny) the pending permission REQUEST_ID of SESSION."""
    try:
        answer = answer_once(client, session_id, request_id, "deny" if deny else "allow",
                             message, budget=retry_for, on_retry=_on_retry)
    except (ApiError, Unreachable) as error:
        _fail(error, session_id, as_json)
    _say(as_json, answer, f"permission {request_id}: {resolution_text(answer['permission'])}")


@click.command("interrupt")
@with_client
@answer_options
@session_argument
def interrupt(client, as_json, retry_for, session_id):
    """Stop the current turn of SESSION's agent; the session stays open."""
    answer = _perform(session_id, lambda: client.interrupt(session_id), repeatable=False,
                      retry_for=retry_for, as_json=as_json)
    _say(as_json, answer, _queued("interrupt", answer))


@click.command("stop")
@with_client
@answer_options
@session_argument
def stop(client, as_json, retry_for, session_id):
    """End SESSION's agent; the session completes."""
    answer = _perform(session_id, lambda: client.stop(session_id), repeatable=True,
                      retry_for=retry_for, as_json=as_json)
    _say(as_json, answer, _queued("stop", answer))


COMMANDS = (send, approve, interrupt, stop)


def new_message_id():
    """A client_message_id of this terminal's own: unique per call."""
    return f"cli-{uuid.uuid4()}"


def _queued(kind, answer):
    command = answer["command"]
    waits = "" if answer.get("runner_attached") else "; no runner is attached: it waits for one"
    return f"{kind} queued (command {command['command_id']}){waits}"


def _perform(session_id, call, *, repeatable, retry_for, as_json):
    try:
        return with_retries(call, repeatable, budget=retry_for, on_retry=_on_retry)
    except (ApiError, Unreachable) as error:
        _fail(error, session_id, as_json)


def _on_retry(error, delay):
    click.echo(f"turnlog: {error}; retrying in {delay:.1f} s", err=True)


def _say(as_json, answer, line):
    click.echo(json.dumps(answer) if as_json else line)


def _fail(error, session_id, as_json):
    """Print why (with --json also the error on stdout) and exit 1; a --server that
    cannot be right exits 125, as for every client command."""
    if isinstance(error, Misconfigured):
        raise ConfigurationError(error.message)
    if as_json:
        body = ({"status": error.status, "code": error.code, "message": error.message,
                 "details": error.details} if isinstance(error, ApiError)
                else {"status": None, "code": "unreachable", "message": str(error), "details": {}})
        click.echo(json.dumps({"error": body}))
    click.echo(f"Error: {explain(error, session_id)}", err=True)
    sys.exit(1)
