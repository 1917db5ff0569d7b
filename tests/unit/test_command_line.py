"""What a session records of its command line: secrets redacted, the first prompt found."""
import pytest

from app.core.command_line import MAX_ARG_CHARS
from app.core.command_line import MAX_ARGS
from app.core.command_line import MAX_PROMPT_CHARS
from app.core.command_line import REDACTED
from app.core.command_line import first_prompt
from app.core.command_line import prompt_text
from app.core.command_line import redacted

KEY = "sk-ant-api03-" + "A1b2" * 8


@pytest.mark.parametrize("args, expected", [
    (["claude", "--api-key", "hunter2", "-p", "hi"], ["claude", "--api-key", REDACTED, "-p", "hi"]),
    (["codex", "--token=abc123"], ["codex", f"--token={REDACTED}"]),
    (["x", "--auth-token", "t", "--password", "p", "--client-secret=s"],
     ["x", "--auth-token", REDACTED, "--password", REDACTED, f"--client-secret={REDACTED}"]),
    (["env", "OPENAI_API_KEY=abc", "GITHUB_TOKEN=ghx", "LANG=C", "claude"],
     ["env", f"OPENAI_API_KEY={REDACTED}", f"GITHUB_TOKEN={REDACTED}", "LANG=C", "claude"]),
    (["codex", "-c", "model_providers.p.api_key=zzz", "-c", "model=o3"],
     ["codex", "-c", f"model_providers.p.api_key={REDACTED}", "-c", "model=o3"]),
    (["claude", "-p", f"use {KEY} please"], ["claude", "-p", f"use {REDACTED} please"]),
    (["curl", "-H", "Authorization: Bearer abc.def-ghi"], ["curl", "-H", f"Authorization: Bearer {REDACTED}"]),
    (["git", "clone", "https://me:s3cret@example.com/r.git"],
     ["git", "clone", f"https://me:{REDACTED}@example.com/r.git"]),
    (["gh", "ghp_" + "x" * 36, "AKIAABCDEFGHIJKLMNOP"], ["gh", REDACTED, REDACTED]),
])
def test_secrets_are_redacted_by_the_option_that_holds_them_or_their_shape(args, expected):
    assert redacted(args) == expected


def test_what_only_looks_like_a_secret_name_is_kept():
    args = ["claude", "--max-tokens", "100", "--output-format", "stream-json", "--keyfile", "k.pem",
            "--", "--token"]
    assert redacted(args) == args


def test_the_recorded_command_is_bounded():
    recorded = redacted(["x" * (MAX_ARG_CHARS + 50)] * (MAX_ARGS + 5))
    assert len(recorded) == MAX_ARGS and len(recorded[0]) == MAX_ARG_CHARS


def test_redacting_twice_changes_nothing_more():
    once = redacted(["a", "--token", "t", f"--k={KEY}", KEY])
    assert redacted(once) == once


@pytest.mark.parametrize("command, prompt", [
    (["claude", "-p", "fix the pager", "--output-format", "stream-json", "--verbose"], "fix the pager"),
    (["claude", "--output-format", "stream-json", "-p", "--verbose", "fix it"], "fix it"),
    (["claude", "--allowedTools", "Bash", "Edit", "-p", "go"], "go"),
    (["/usr/local/bin/claude", "--model", "opus", "-p", "hello"], "hello"),
    (["env", "A=1", "claude", "-p", "wrapped"], "wrapped"),
    (["codex", "exec", "--json", "fix the failing test"], "fix the failing test"),
    (["codex", "--model", "o3", "exec", "-C", "/tmp", "--json", "go on"], "go on"),
    (["codex", "exec", "resume", "0199-abc", "carry on", "--json"], "carry on"),
    (["codex", "exec", "resume", "--last", "carry on"], "carry on"),
    (["gemini", "-p", "explain this", "--output-format", "stream-json"], "explain this"),
    (["gemini", "--model", "pro", "--prompt=inline"], "inline"),
    (["claude", "-p", "--", "-starts with a dash"], "-starts with a dash"),
])
def test_the_first_prompt_is_read_from_each_agents_command_line(command, prompt):
    assert first_prompt(command) == prompt


@pytest.mark.parametrize("command", [
    ["python", "job.py", "do things"],  # not an agent
    ["claude", "--output-format", "stream-json", "-p"],  # the prompt comes on stdin
    ["codex", "exec", "-"],  # likewise
    ["codex", "login"],
    ["gemini", "-p", "   "],
])
def test_no_prompt_is_made_up(command):
    assert first_prompt(command) is None


def test_a_prompt_is_recorded_redacted_and_bounded():
    assert prompt_text(f"key {KEY}") == f"key {REDACTED}"
    assert len(prompt_text("p" * (MAX_PROMPT_CHARS * 2))) == MAX_PROMPT_CHARS
    assert prompt_text(None) is None
