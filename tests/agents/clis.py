"""Where the pinned agent CLIs are, and how to run each one against a fake model server.

The CLIs live in `$TURNLOG_AGENTS_DIR/node_modules` (default `.agents/` at the repository
root, where .ci/run installs .ci/agents/package.json's pinned versions). `locate(name)`
gives the command that starts one, or `missing(name)` the reason a test skips.

`Agent.setup(name, tmp, base)` makes a home of its own under `tmp` (HOME, TMPDIR,
CODEX_HOME, GEMINI_CLI_HOME with the config files each needs) and gives the environment
and the argument lists for a headless run against the fake server at `base`.
"""
import functools
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("claude", "codex", "gemini")
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex",
            "gemini": "@google/gemini-cli"}
# The native programs the npm packages wrap: starting them directly saves a node start.
NATIVE = {"claude": "@anthropic-ai/claude-code-linux-x64/claude",
          "codex": "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"}
SCRIPT = {"claude": "@anthropic-ai/claude-code/bin/claude.exe", "codex": "@openai/codex/bin/codex.js",
          "gemini": "@google/gemini-cli/bundle/gemini.js"}
FAKE_KEY = "turnlog-fake-key"
CODEX_MODEL = "gpt-5.5"
GEMINI_MODEL = "gemini-2.5-flash"


def agents_dir():
    return Path(os.environ.get("TURNLOG_AGENTS_DIR") or ROOT / ".agents")


def modules():
    return agents_dir() / "node_modules"


def version(name):
    """The installed version of `name`'s npm package, None when it is not installed."""
    try:
        return json.loads((modules() / PACKAGES[name] / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def pinned(name):
    """The version of `name` that .ci/agents/package.json pins (what CI installs)."""
    pins = json.loads((ROOT / ".ci" / "agents" / "package.json").read_text())["dependencies"]
    return pins[PACKAGES[name]]


def locate(name):
    """The argument list that starts CLI `name`, or None."""
    native = modules() / NATIVE.get(name, "-")
    if name in NATIVE and os.access(native, os.X_OK):
        return [str(native)]
    script = modules() / SCRIPT[name]
    if not script.is_file():
        return None
    node = shutil.which("node")
    return [node, str(script)] if node else None


def missing(name):
    """Why CLI `name` cannot run here (the skip reason), or None when it can."""
    command = locate(name)
    if command is None:
        return (f"{PACKAGES[name]} is not installed under {modules()} (and node must be on PATH):"
                " run .ci/agents/install (docs/agents.md)"
                " or point TURNLOG_AGENTS_DIR at a folder holding node_modules/")
    wanted, have = node_needed(name), node_major(command[0]) if len(command) > 1 else None
    if wanted and have is not None and have < wanted:
        return f"{PACKAGES[name]} needs node >= {wanted}, this node is {have} (docs/agents.md)"
    return None


def node_needed(name):
    """The least node major version the package's `engines` asks for, or None."""
    try:
        engines = json.loads((modules() / PACKAGES[name] / "package.json").read_text()).get("engines") or {}
    except (OSError, ValueError):
        return None
    found = re.search(r">=\s*(\d+)", str(engines.get("node", "")))
    return int(found.group(1)) if found else None


@functools.cache
def node_major(node):
    """The major version of the `node` program, or None."""
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.match(r"v(\d+)", done.stdout.strip())
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Agent:
    name: str
    command: list  # the program, e.g. [".../claude"]
    env: dict  # the whole environment to run it with
    cwd: Path  # an empty work folder of its own
    home: Path

    def headless(self, prompt, *extra):
        """argv of one headless run of `prompt`, printing the CLI's JSON lines."""
        return self.command + HEADLESS[self.name](prompt) + list(extra)

    def interactive(self):
        """argv of a long-running CLI driven over stdin (docs/control.md; FORMATS B2-B4):
        Claude's stream-json with permission requests on stdout, Codex's app-server, Gemini's ACP."""
        return self.command + INTERACTIVE[self.name]

    def resumed(self, prompt, session_id):
        """argv of a run that continues session `session_id` with `prompt`."""
        return self.command + RESUMED[self.name](prompt, session_id)

    @classmethod
    def setup(cls, name, tmp, base):
        tmp = Path(tmp)
        home, work, temp = tmp / "home", tmp / "work", tmp / "tmp"
        for folder in (home, work, temp):
            folder.mkdir(parents=True, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
               "TMPDIR": str(temp), "LANG": "C.UTF-8", "NO_COLOR": "1", "CI": "1"}
        env.update(ENVIRONMENT[name](home, base))
        return cls(name, locate(name), env, work, home)


def _claude_env(home, base):
    return {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": FAKE_KEY, "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1"}


def _codex_env(home, base):
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model_provider = "fake"\nmodel = "{CODEX_MODEL}"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{base}/v1"\nwire_api = "responses"\nenv_key = "FAKE_API_KEY"\n'
        "request_max_retries = 2\nstream_max_retries = 0\n")
    return {"CODEX_HOME": str(codex_home), "FAKE_API_KEY": FAKE_KEY}


def _gemini_env(home, base):
    settings = home / ".gemini"
    settings.mkdir(exist_ok=True)
    (settings / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True}, "privacy": {"usageStatisticsEnabled": False}}))
    return {"GOOGLE_GEMINI_BASE_URL": base, "GEMINI_API_KEY": FAKE_KEY, "GEMINI_CLI_HOME": str(home),
            "GEMINI_CLI_TRUST_WORKSPACE": "true"}


ENVIRONMENT = {"claude": _claude_env, "codex": _codex_env, "gemini": _gemini_env}
# Claude as root refuses --dangerously-skip-permissions; naming the tools allows them.
HEADLESS = {
    "claude": lambda p: ["-p", p, "--output-format", "stream-json", "--verbose",
                         "--allowedTools", "Bash,Write"],
    "codex": lambda p: ["exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", p],
    "gemini": lambda p: ["-p", p, "--output-format", "stream-json", "--yolo", "--skip-trust",
                         "--model", GEMINI_MODEL],
}
INTERACTIVE = {
    "claude": ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
               "--permission-prompt-tool", "stdio", "--replay-user-messages"],
    "codex": ["app-server"],
    "gemini": ["--acp", "--model", GEMINI_MODEL],
}
RESUMED = {
    "claude": lambda p, sid: HEADLESS["claude"](p) + ["--resume", sid],
    "codex": lambda p, sid: ["exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access",
                             "resume", sid, p],
    "gemini": lambda p, sid: HEADLESS["gemini"](p) + ["--resume", sid],
}
