"""What a session records of the command that ran it: its arguments with secrets
redacted, and the first prompt the agent was given (docs/runner.md, "What a session
records").

Both the runner (before anything leaves the machine) and the server (before anything
is stored, whatever client sent it) apply `redacted`: a secret is dropped where it is
recognised by the option or variable that holds it (`--api-key X`, `--token=X`,
`OPENAI_API_KEY=X`, `-c model_providers.p.api_key=X`) or by its own shape (`sk-...`,
`ghp_...`, `Bearer ...`, a password in a URL). Pure: the client's layer and the
server's both import it.
"""
import os
import re

REDACTED = "[redacted]"
# Bounds of what is recorded: a command line is for reading, not for replaying.
MAX_ARGS = 200
MAX_ARG_CHARS = 2000
MAX_PROMPT_CHARS = 4000
# The words of an option or variable name that say its value is a secret ("--api-key",
# "GITHUB_TOKEN", "auth.password"); a name is cut into words at - _ . and case is ignored,
# so "--max-tokens" (a number) is not one.
SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "pwd",
                          "auth", "credential", "credentials", "bearer", "cookie",
                          "authorization"})
NAME_WORDS = re.compile(r"[-_.]+")
# `NAME=value`, as `env` takes it or a config override (`-c a.b=value`) spells it.
ASSIGNMENT = re.compile(r"^([A-Za-z_][\w.\-]*)=(.*)$", re.DOTALL)
# Secrets by their own shape, wherever they are in an argument (a prompt too).
SECRET_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{16,}"  # OpenAI, Anthropic (sk-ant-...)
    r"|\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_\w{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bAIza[0-9A-Za-z_\-]{30,}"  # Google API key
    r"|\btl[ru]_[A-Za-z0-9_\-]{20,}"  # turnlog's own runner and user tokens
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/\-]+=*"
)
URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+@", re.IGNORECASE)
BEARER = re.compile(r"(?i)\bbearer\s+")


def redacted(args):
    """`args` (a list of strings) with every secret replaced by REDACTED, at most
    MAX_ARGS of them, each at most MAX_ARG_CHARS."""
    out = []
    secret_next = False
    for arg in list(args)[:MAX_ARGS]:
        arg = str(arg)
        if secret_next and arg != "--":
            out.append(REDACTED)
            secret_next = False
            continue
        secret_next = False
        if arg.startswith("-") and arg != "--":
            name, eq, value = arg.partition("=")
            if _secret_name(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    secret_next = True
                continue
        out.append(_cut(_redact_assignment(arg)))
    return out


def redacted_text(text):
    """`text` (a prompt) with the secrets recognised by their shape replaced."""
    return URL_PASSWORD.sub(rf"\1{REDACTED}@", SECRET_SHAPES.sub(_shape_mark, text))


def _shape_mark(match):
    bearer = BEARER.match(match.group(0))
    return f"{bearer.group(0)}{REDACTED}" if bearer else REDACTED


def _secret_name(name):
    return any(word.lower() in SECRET_WORDS for word in NAME_WORDS.split(name.lstrip("-")))


def _redact_assignment(arg):
    assigned = ASSIGNMENT.match(arg)
    if assigned and _secret_name(assigned.group(1)):
        return f"{assigned.group(1)}={REDACTED}"
    return redacted_text(arg)


def _cut(arg):
    return arg if len(arg) <= MAX_ARG_CHARS else arg[:MAX_ARG_CHARS - 1] + "…"


# --- the first prompt -------------------------------------------------------------

# Per agent: the options whose value is the prompt, the options that take a value (so
# what follows is no prompt), and those whose values run to the next option (commander's
# variadic `<x...>`, as Claude Code's --allowedTools).
CLAUDE = {
    "prompt": (),
    "value": {"--add-dir", "--agents", "--allowedTools", "--allowed-tools", "--append-system-prompt",
              "--betas", "--debug", "--disallowedTools", "--disallowed-tools", "--fallback-model",
              "--input-format", "--json-schema", "--max-budget-usd", "--max-turns", "--mcp-config",
              "--model", "--output-format", "--permission-mode", "--permission-prompt-tool",
              "--plugin-dir", "-r", "--resume", "--session-id", "--setting-sources", "--settings",
              "--system-prompt", "--system-prompt-file", "--tools", "--agent"},
    "variadic": {"--add-dir", "--allowedTools", "--allowed-tools", "--betas", "--disallowedTools",
                 "--disallowed-tools", "--mcp-config", "--plugin-dir", "--tools"},
}
CODEX = {
    "prompt": (),
    "value": {"-c", "--config", "-i", "--image", "-m", "--model", "-p", "--profile", "-s",
              "--sandbox", "-C", "--cd", "--add-dir", "--output-schema", "--color", "-o",
              "--output-last-message", "--local-provider", "--enable", "--disable"},
    "variadic": set(),
}
GEMINI = {
    "prompt": ("-p", "--prompt", "-i", "--prompt-interactive"),
    "value": {"-m", "--model", "-o", "--output-format", "--approval-mode", "--allowed-mcp-server-names",
              "--allowed-tools", "-e", "--extensions", "--include-directories", "--sandbox-image",
              "--proxy", "--telemetry-target", "--telemetry-otlp-endpoint", "--telemetry-outfile",
              "-r", "--resume", "--delete-session"},
    "variadic": set(),
}
AGENTS = {"claude": CLAUDE, "codex": CODEX, "gemini": GEMINI}


def agent_name(command):
    """The agent a command runs (`claude`, `codex`, `gemini`) and where its own arguments
    start, skipping a wrapper (`env A=1 claude`, `npx codex`); (None, 0) for another command."""
    for at, arg in enumerate(command):
        name = os.path.basename(str(arg)).lower().removesuffix(".js").removesuffix(".exe")
        if name in AGENTS:
            return name, at + 1
    return None, 0


def first_prompt(command):
    """The prompt `command` gives its agent on its command line (Claude's positional
    prompt, `codex exec "..."`, Gemini's `-p "..."`), or None when there is none (another
    command, a prompt read from stdin)."""
    command = [str(arg) for arg in command]
    name, start = agent_name(command)
    if name is None:
        return None
    args = command[start:]
    if name == "codex":
        args = _codex_exec_args(args)
        if args is None:
            return None
    prompt = _scan(args, AGENTS[name])
    if prompt is None or prompt == "-" or not prompt.strip():
        return None
    return prompt


def _codex_exec_args(args):
    """The arguments after `exec` (or `e`), less `resume SESSION_ID`; None without exec."""
    at = 0
    while at < len(args) and args[at] not in ("exec", "e"):
        if not args[at].startswith("-"):
            return None  # another subcommand
        name, eq, _ = args[at].partition("=")
        at = _skip_values(args, at + 1, False) if not eq and name in CODEX["value"] else at + 1
    if at >= len(args):
        return None
    rest = args[at + 1:]
    for at, arg in enumerate(rest):
        if arg == "resume":
            after = rest[at + 1:]
            if "--last" in after:
                return rest[:at] + after
            positional = [i for i, a in enumerate(after) if not a.startswith("-")]
            if positional:  # the first one is the session id
                del after[positional[0]]
            return rest[:at] + after
    return rest


def _scan(args, agent):
    """The value of a prompt option, else the first argument no option takes."""
    positional = None
    at = 0
    while at < len(args):
        arg = args[at]
        if arg == "--":
            return positional or (args[at + 1] if at + 1 < len(args) else None)
        name, eq, value = arg.partition("=")
        if arg.startswith("-") and name in agent["prompt"]:
            return value if eq else (args[at + 1] if at + 1 < len(args) else None)
        if arg.startswith("-"):
            at += 1
            if not eq and name in agent["value"]:
                at = _skip_values(args, at, name in agent["variadic"])
            continue
        if positional is None:
            positional = arg
        at += 1
    return positional


def _skip_values(args, at, variadic):
    if at < len(args) and not args[at].startswith("-"):
        at += 1
        while variadic and at < len(args) and not args[at].startswith("-"):
            at += 1
    return at


def prompt_text(prompt):
    """A first prompt as it is recorded: secrets by shape redacted, at most MAX_PROMPT_CHARS."""
    if prompt is None:
        return None
    text = redacted_text(str(prompt))
    return text if len(text) <= MAX_PROMPT_CHARS else text[:MAX_PROMPT_CHARS - 1] + "…"
