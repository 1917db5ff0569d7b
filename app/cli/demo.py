"""demo: the README's first command. Migrate, ingest a bundled provider sample into a
new session, and say where to read it (API, viewer) and with which token."""
import json
import logging
import os
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import click
from flask import current_app

from app import db
from app import schemas
from app.cli.command import operator_command
from app.cli.server_url import base_url
from app.cli.server_url import configured_bind
from app.core.errors import InvalidTokenName
from app.core.records import Chunk
from app.extensions import db as sqla
from app.providers import PROVIDERS
from app.services import ingest
from app.services import sessions
from app.services import tokens
from app.services.access import USER
from app.transcript.flush_policy import SESSION_TYPES

DEMO_BATCH = 50
DEMO_MACHINE = "demo"
# The demo's user tokens, kept in the instance folder beside its database, so running
# the demo again prints the token it printed before instead of minting one more.
DEMO_TOKENS_FILE = "demo-tokens.json"


@operator_command("demo")
@click.option("--provider", type=click.Choice(PROVIDERS), default="claude", show_default=True,
              help="The agent CLI whose stdout is ingested (its bundled sample, or --sample).")
@click.option("--sample", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A file of that provider's stdout lines instead of the bundled sample.")
@click.option("--session-type", type=click.Choice(SESSION_TYPES), default="agent",
              show_default=True)
@click.option("--user", default="demo", show_default=True, help="The session's owner.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the whole session (transcript included), the URLs and the token as JSON.")
def demo(provider, sample, session_type, user, as_json):
    """Migrate, ingest a sample stream into a new session, print where to read it.

    With authentication on (the default) it also prints a user token for the owner,
    to sign in to the viewer or send as `Authorization: Bearer <token>`: the one it
    printed before while that still works, else a new one.
    """
    user = tokens.checked_name(user, InvalidTokenName, "user")  # checked before any write
    lines = _read_sample(sample) if sample else _bundled_sample(provider)
    db.upgrade(sqla.engine, db.migrations_dir())
    with _summary_only():
        sid = _ingest(lines, provider, session_type, user)
    found = sessions.get_session(sid, db.reading())
    secret = None if current_app.config["AUTH_DISABLED"] else _demo_token(user)
    urls = _urls(sid)
    if as_json:
        payload = {"session": schemas.session_schema.dump(found), **urls, "user_token": secret}
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(f"ingested {len(lines)} {provider} lines into session {sid}:"
               f" {found.message_count} messages, {found.status}")
    click.echo(f"  API:    {urls['api_url']}")
    click.echo(f"  viewer: {urls['viewer_url']}")
    if base_url(configured_bind()) is None:
        click.echo(f"          (paths on {configured_bind()}: GUNICORN_BIND is no TCP address,"
                   " so reach them through the proxy in front of it)")
    if secret is None:
        click.echo("  token:  none needed, authentication is off (AUTH_DISABLED)")
    else:
        click.echo(f"  token:  {secret}")
        click.echo(f"          (user {user!r}: sign in to the viewer with it, or send"
                   " `Authorization: Bearer <token>`)")
    click.echo("serve with `gunicorn`; `demo --json` prints the whole session")


def _demo_token(user):
    """`user`'s demo token: the one saved by an earlier demo while it is valid on this
    database (not revoked, not expired), else a new one, saved (file mode 0600)."""
    path = Path(current_app.config["DEMO_TOKENS_FILE"]
                or Path(current_app.instance_path) / DEMO_TOKENS_FILE)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    if not isinstance(saved, dict):
        saved = {}
    secret = saved.get(user)
    caller = tokens.caller_for_secret(secret, db.reading()) if isinstance(secret, str) else None
    if caller is not None and caller.kind == USER and caller.name == user:
        return secret
    secret = tokens.issue(USER, user, db.writing())[1]
    saved[user] = secret
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(saved, out)
    return secret


def _ingest(lines, provider, session_type, user):
    """A new session holding `lines`, completed; its id."""
    session = sessions.open_session({"session_type": session_type, "user_id": user,
                                     "provider": provider, "machine": DEMO_MACHINE}, db.writing())
    sid = session.session_id
    retention = current_app.config["OUTPUT_RETENTION_SECONDS"]
    for start in range(0, len(lines), DEMO_BATCH):
        batch = [Chunk(line, "stdout", start + i) for i, line in enumerate(lines[start:start + DEMO_BATCH])]
        ingest.ingest_output(sid, batch, db.writing(), retention_seconds=retention)
    ingest.complete_session(sid, 0, db.writing())
    return sid


@contextmanager
def _summary_only():
    """Hold back the services' INFO lines (session opened, completed): the summary
    printed next says the same, and a first run should read as one short answer."""
    services = logging.getLogger("app.services")
    level = services.level
    services.setLevel(logging.WARNING)
    try:
        yield
    finally:
        services.setLevel(level)


def _bundled_sample(provider):
    text = resources.files("app.samples").joinpath(f"{provider}_session.jsonl").read_text("utf-8")
    return text.splitlines()


def _read_sample(path):
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except UnicodeDecodeError as err:
        raise click.ClickException(f"{path} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    if not lines:
        raise click.ClickException(f"{path} holds no lines to ingest")
    return lines


def _urls(session_id):
    """Where the session is read, on the address `gunicorn` serves (GUNICORN_BIND)."""
    base = base_url(configured_bind()) or ""
    return {"api_url": f"{base}/api/remote/sessions/{session_id}",
            "viewer_url": f"{base}/sessions/{session_id}"}
