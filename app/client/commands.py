"""`turnlog run` and `turnlog follow`: click commands that need a server URL and a token only.

The token comes from `--token-fd N` (read to its end, then closed), `--token-file PATH`
(its first line), or `--token` / `TURNLOG_TOKEN`. The agent child of `turnlog run` must
not find it, nor the session's write token: neither is ever in its environment, and
when the token came by `--token` or the environment (where `/proc/<runner>/cmdline`
and `environ` show it to any process of the same user, and to root whatever
`PR_SET_DUMPABLE` says), the runner first execs itself again with that variable (and
any other holding the token) taken out of its environment, and the token on a pipe
whose descriptor the child does not inherit.
"""
import ctypes
import json
import os
import sys
from pathlib import Path

import click

from app.client.drivers import CHOICES as DRIVERS
from app.client.drivers import driver_for
from app.client.errors import RUNNER_FAILED
from app.client.errors import ApiError
from app.client.errors import Misconfigured
from app.client.errors import Unreachable
from app.client.http import Client
from app.client.http import checked_server
from app.client.ids import is_session_id
from app.client.interactive import STOP_GRACE_SECONDS
from app.client.render import Renderer
from app.client.render import failure_lines
from app.client.render import header
from app.client.runner import RunRequest
from app.client.runner import run as run_command
from app.client.sender import MAX_BATCH_FAILURES

PROVIDERS = ("claude", "codex", "gemini")
SESSION_TYPES = ("chat", "agent", "terminal", "workflow")
# A token is short; a pipe holds 64 KiB before a write blocks.
MAX_TOKEN_BYTES = 4096
PR_SET_DUMPABLE = 4
# What a user token starts with (the server's app/services/tokens.py): one that reads
# and drives sessions, which no runner can write with.
USER_TOKEN_PREFIX = "tlu_"


def default_spool():
    """$TURNLOG_SPOOL, else turnlog/spool in the XDG state folder."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return str(Path(state) / "turnlog" / "spool")


class ConfigurationError(click.ClickException):
    """A setting that cannot work (the --server URL): one line naming the fix, exit 125."""

    exit_code = RUNNER_FAILED


def _server_given(ctx, param, value):
    """The server URL, checked (scheme, host, the root and not an API path); a missing one
    names both ways to give it (click's own message names the option only)."""
    if ctx.resilient_parsing:
        return value
    if not value:
        raise click.UsageError("the turnlog server's URL is needed: --server URL"
                               " (or TURNLOG_SERVER)", ctx=ctx)
    try:
        return checked_server(value)
    except Misconfigured as wrong:
        raise ConfigurationError(wrong.message) from None


server_option = click.option("--server", envvar="TURNLOG_SERVER", callback=_server_given,
                             help="the turnlog server's URL (or TURNLOG_SERVER)")


def token_options(command):
    """--token / TURNLOG_TOKEN, --token-file, --token-fd."""
    for option in reversed((
            click.option("--token", envvar="TURNLOG_TOKEN", default=None,
                         help="a bearer token (or TURNLOG_TOKEN); --token-file or --token-fd"
                              " keep it off the command line and the environment"),
            click.option("--token-file", type=click.Path(dir_okay=False), default=None,
                         help="read the token from this file's first line"),
            click.option("--token-fd", type=click.IntRange(min=0), default=None,
                         help="read the token from this open file descriptor, then close it"))):
        command = option(command)
    return command


def read_token(token, token_file, token_fd):
    """(the token, where it came from: "fd", "file" or "argument"); the first of --token-fd,
    --token-file, --token / TURNLOG_TOKEN that is given."""
    if token_fd is not None:
        try:
            with os.fdopen(token_fd, "rb") as source:
                raw = source.read(MAX_TOKEN_BYTES + 1)
        except OSError as err:
            raise click.BadParameter(f"cannot read fd {token_fd}: {err.strerror}",
                                     param_hint="--token-fd") from None
        return _one_token(raw, "--token-fd"), "fd"
    if token_file is not None:
        try:
            with open(token_file, "rb") as source:
                raw = source.read(MAX_TOKEN_BYTES + 1)
        except OSError as err:
            raise click.BadParameter(f"cannot read {token_file}: {err.strerror}",
                                     param_hint="--token-file") from None
        return _one_token(raw.split(b"\n", 1)[0], "--token-file"), "file"
    if token:
        return _one_token(token.encode(), "--token"), "argument"
    raise click.UsageError("a token is needed: --token-file PATH, --token-fd N, or --token T"
                           " (or TURNLOG_TOKEN)")


def _one_token(raw, hint):
    text = raw.decode("utf-8", "replace").strip()
    if not text or len(raw) > MAX_TOKEN_BYTES or any(c.isspace() for c in text):
        raise click.BadParameter(f"not a token (one word of at most {MAX_TOKEN_BYTES} bytes)",
                                 param_hint=hint)
    return text


def hide_token(token, source, args):
    """Exec `turnlog run` again (never returning) with the token on a pipe, when it is in
    this process's environment or command line; `args` are the command's arguments,
    without any token. Does nothing when the token came by file or fd and no variable
    holds it."""
    in_env = "TURNLOG_TOKEN" in os.environ or token in os.environ.values()
    if source != "argument" and not in_env:
        return
    env = {key: value for key, value in os.environ.items()
           if key != "TURNLOG_TOKEN" and value != token}
    read_end, write_end = os.pipe()
    os.write(write_end, token.encode())
    os.close(write_end)
    os.set_inheritable(read_end, True)
    # This interpreter's own sys.path, so the same `app` is imported whatever the folder.
    boot = (f"import sys; sys.path[:] = {sys.path!r}; "
            "from app.client.commands import run; run.main(sys.argv[1:], prog_name='turnlog run')")
    try:
        os.execve(sys.executable, [sys.executable, "-c", boot, "--token-fd", str(read_end),
                                   *args], env)
    except OSError as err:  # never run the child with the token where it can read it
        raise click.ClickException(f"cannot exec {sys.executable} again to take the token out of"
                                   f" the environment and command line ({err.strerror}): pass it"
                                   " with --token-file or --token-fd") from None


def not_dumpable():
    """Defence in depth on Linux: other processes of the same user (not root) can no longer
    read this one's memory or environ through /proc, nor ptrace it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux


def check_session_id(_context, _param, value):
    if value is not None and not is_session_id(value):
        raise click.BadParameter(f"{value!r} is not a session id (a UUID, as `turnlog run`"
                                 " prints it)")
    return value


@click.command("run", context_settings={"allow_interspersed_args": False,
                                        "ignore_unknown_options": True})
@server_option
@token_options
@click.option("--session-type", type=click.Choice(SESSION_TYPES), default=None,
              help="agent by default; workflow when --workflow-id is given")
@click.option("--workflow-id", default=None, help="the workflow this session belongs to")
@click.option("--provider", type=click.Choice(PROVIDERS), default="claude",
              help="whose stream-json the command prints")
@click.option("--user", "user_id", default=None, help="the session's owner (a runner token's user)")
@click.option("--session", "session_id", default=None, callback=check_session_id,
              help="continue this session from its spool (after a crash)")
@click.option("--spool", "spool_dir", envvar="TURNLOG_SPOOL", default=default_spool,
              help="where the durable spool files live (or TURNLOG_SPOOL)")
@click.option("--max-batch-failures", envvar="TURNLOG_MAX_BATCH_FAILURES",
              type=click.IntRange(min=1), default=MAX_BATCH_FAILURES, show_default=True,
              help="give a batch up (exit 124) after it failed on the server this many times"
                   " in a row (or TURNLOG_MAX_BATCH_FAILURES)")
@click.option("--interactive", is_flag=True,
              help="drive the agent from the session's command channel: prompts, permission"
                   " answers, interrupts and stops from the viewer or the API (docs/control.md)")
@click.option("--prompt", default=None, help="the first prompt of an interactive run")
@click.option("--driver", type=click.Choice(DRIVERS), default="auto", show_default=True,
              help="how the interactive agent is driven (auto: claude, codex or gemini for a"
                   " command of that name, generic for any other)")
@click.option("--stop-grace", envvar="TURNLOG_STOP_GRACE_SECONDS",
              type=click.FloatRange(min=0), default=STOP_GRACE_SECONDS, show_default=True,
              help="seconds a stopped agent gets after its stdin closes, and again after"
                   " SIGTERM, before SIGKILL (or TURNLOG_STOP_GRACE_SECONDS)")
@click.option("--quiet", is_flag=True,
              help="do not pass the command's stdout and stderr through to this terminal")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(server, token, token_file, token_fd, session_type, workflow_id, provider, user_id,
        session_id, spool_dir, max_batch_failures, interactive, prompt, driver, stop_grace,
        quiet, command):
    """Run COMMAND, posting its stdout and stderr lines to a session; exit with its code.
    Its stdout and stderr also pass through to this terminal, as with `tee` (--quiet: not).

    Write `--` before the command: turnlog run --server URL --token-file F -- claude -p ...
    """
    if workflow_id and session_type not in (None, "workflow"):
        raise click.UsageError("--workflow-id goes with --session-type workflow")
    if not interactive and (prompt is not None or driver != "auto"):
        raise click.UsageError("--prompt and --driver go with --interactive")
    if interactive:
        provider = driven_provider(driver, command, provider)
    token, source = read_token(token, token_file, token_fd)
    check_runner_token(token)
    args = ["--server", server, "--provider", provider, "--spool", spool_dir,
            "--max-batch-failures", str(max_batch_failures)]
    if quiet:
        args.append("--quiet")
    if interactive:
        args += ["--interactive", "--driver", driver, "--stop-grace", repr(stop_grace)]
    for name, value in (("--session-type", session_type), ("--workflow-id", workflow_id),
                        ("--user", user_id), ("--session", session_id), ("--prompt", prompt)):
        if value is not None:
            args += [name, value]
    hide_token(token, source, [*args, "--", *command])
    not_dumpable()
    request = RunRequest(
        command=command, spool_dir=spool_dir, provider=provider, user_id=user_id,
        session_type=session_type or ("workflow" if workflow_id else "agent"),
        context={"workflow_id": workflow_id} if workflow_id else None, session_id=session_id,
        max_batch_failures=max_batch_failures, interactive=interactive, prompt=prompt,
        driver=driver, stop_grace=stop_grace, tee=not quiet)
    sys.exit(run_command(Client(server, token), request))


def check_runner_token(token):
    """A user token cannot write a session's output: refuse it before a session is opened
    (one would be, and stay `running` with nothing in it), naming the fix."""
    if token.startswith(USER_TOKEN_PREFIX):
        raise ConfigurationError(
            f"turnlog run needs a runner token (tlr_...), not a user token ({USER_TOKEN_PREFIX}...):"
            " an operator makes one with `turnlog create-runner-token --machine M --user U`"
            " (user tokens are for follow, send, approve, interrupt, stop and attach)")


def driven_provider(driver, command, provider):
    """The provider of an interactive run: the one whose lines its driver posts (the
    Codex and Gemini drivers translate into Codex's and Gemini's), when --provider was
    left out."""
    posts = getattr(driver_for(driver, list(command)), "provider", None)
    if posts is None or provider == posts:
        return provider
    if click.get_current_context().get_parameter_source("provider") \
            is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError(f"the {driver_for(driver, list(command)).name} driver posts"
                               f" {posts} lines: --provider {posts}")
    return posts


def _print_header(client, session_id, err):
    """Say which session this is (on stderr, so stdout stays the transcript); skipped
    when the server cannot be reached yet: following says so while it retries."""
    try:
        session = client.get_session(session_id)
    except Unreachable:
        return
    err(f"turnlog: {header(session)}\n")


def _status_of(event):
    try:
        return json.loads(event.data or "{}").get("status")
    except (ValueError, AttributeError):
        return None


def _print_failure(client, session_id, err):
    """After a failed session's end: why it failed, on stderr (skipped when the server
    cannot be reached any more: the end line gave the exit code). Not with --raw, whose
    stderr is the agent's stderr lines, as posted."""
    try:
        session = client.get_session(session_id)
    except Unreachable:
        return
    for line in failure_lines(session):
        err(f"turnlog: {line}\n")


@click.command("follow")
@server_option
@token_options
@click.option("--raw", is_flag=True, help="print the raw output lines instead")
@click.argument("session_id")
def follow(server, token, token_file, token_fd, raw, session_id):
    """Print a session's transcript live, resuming after dropped connections."""
    token, _ = read_token(token, token_file, token_fd)
    def out(text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def err(text):
        sys.stderr.write(text)
        sys.stderr.flush()

    def retrying(reason, delay, tries):
        if tries == 1 or tries % 10 == 0:
            err(f"turnlog: {reason}; retrying in {delay:.1f} s (try {tries})\n")

    renderer = Renderer(out, err, raw=raw)
    client = Client(server, token)
    try:
        if not raw:  # raw stderr is the agent's stderr lines, as posted
            _print_header(client, session_id, err)
        for event in client.follow(session_id, raw=raw, on_retry=retrying):
            renderer.handle(event)
            if not raw and event.event == "end" and _status_of(event) == "failed":
                _print_failure(client, session_id, err)
    except Misconfigured as wrong:
        raise ConfigurationError(wrong.message) from None
    except ApiError as error:
        raise click.ClickException(f"{error.status} {error.code}: {error.message}") from None
    except Unreachable as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        sys.exit(130)
