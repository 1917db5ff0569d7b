"""The real agent CLIs (Claude Code, Codex, Gemini CLI at .ci/agents' pinned versions) run
headless through `turnlog run` against a real gunicorn, each talking to a scripted fake
model server on loopback (tests/agents): the transcript, the evidence of a shell command,
and the token totals match what the CLI itself reported. A CLI that is not installed
skips its tests with the reason (docs/agents.md says how to install them)."""
import pytest

from tests import servers
from tests.agents import clis
from tests.agents import runs

pytestmark = pytest.mark.real_agents


def cli(name):
    reason = clis.missing(name)
    return pytest.param(name, marks=pytest.mark.skipif(reason is not None, reason=reason or ""))


ALL = [cli(name) for name in clis.NAMES]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with servers.gunicorn(tmp_path_factory.mktemp("real-agents"), auth=True) as served:
        yield served


@pytest.fixture(scope="module")
def tokens(server):
    return (server.new_token("create-runner-token", "--machine", "m1", "--user", "alice"),
            server.new_token("create-user-token", "--user", "alice"))


def session(server, token, session_id):
    status, body = servers.call(server.base, "GET", f"/api/remote/sessions/{session_id}", token=token)
    assert status == 200, body
    return body["session"]


def evidence(server, token, session_id):
    status, body = servers.call(server.base, "GET", f"/api/remote/sessions/{session_id}/evidence",
                                token=token)
    assert status == 200, body
    return body["evidence"]


def cli_totals(name, lines):
    """(input, output) tokens as the CLI itself totals them on its last result line."""
    if name == "claude":
        usage = [line for line in lines if line.get("type") == "result"][-1]["usage"]
        return (usage["input_tokens"] + usage["cache_creation_input_tokens"]
                + usage["cache_read_input_tokens"], usage["output_tokens"])
    if name == "codex":
        usage = [line for line in lines if line.get("type") == "turn.completed"][-1]["usage"]
        return usage["input_tokens"], usage["output_tokens"]
    stats = [line for line in lines if line.get("type") == "result"][-1]["stats"]
    return stats["input_tokens"], stats["output_tokens"]


def assistant_texts(record):
    return [m["content"] for m in record["messages"] if m["role"] == "assistant" and (m["content"] or "").strip()]


def check_totals(name, record, run):
    expected = cli_totals(name, run.lines)
    assert (record["total_input_tokens"], record["total_output_tokens"]) == expected
    rows = [m for m in record["messages"] if m["role"] in ("assistant", "system")]
    assert record["message_count"] == len(rows)


@pytest.mark.parametrize("name", ALL)
def test_a_plain_answer_is_one_assistant_row_with_the_clis_own_token_totals(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "plain", tmp_path)
    assert run.code == 0, run.stderr
    record = session(server, user, run.session_id)
    assert record["status"] == "completed" and record["exit_code"] == 0
    assert "".join(assistant_texts(record)) == "Hello, turnlog! This is a plain answer."
    check_totals(name, record, run)
    assert record["total_output_tokens"] == 11
    assert run.seconds < runs.RUN_SECONDS


@pytest.mark.parametrize("name", ALL)
def test_a_shell_command_that_succeeds_is_evidence_with_its_output(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "shell_ok", tmp_path)
    assert run.code == 0, run.stderr
    record = session(server, user, run.session_id)
    [item] = evidence(server, user, run.session_id)
    assert "echo turnlog-shell-ok" in item["command"]
    assert "turnlog-shell-ok" in item["output_head"] and item["is_error"] is False
    assert assistant_texts(record)[-1].endswith("turnlog-shell-ok.")
    check_totals(name, record, run)
    assert len(runs_model_calls(run)) == 2  # the call that asked for the tool, the one after


@pytest.mark.parametrize("name", ALL)
def test_a_shell_command_that_fails_is_evidence_marked_an_error(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "shell_fail", tmp_path)
    assert run.code == 0, run.stderr
    [item] = evidence(server, user, run.session_id)
    assert "ls /turnlog-no-such-dir" in item["command"]
    assert "No such file or directory" in item["output_head"] + item["output_tail"]
    # Gemini CLI 0.61 reports a failed shell command as status "success" with no exit
    # code (the failure is only in its output text), so nothing can mark it an error.
    assert item["is_error"] is (name != "gemini")
    check_totals(name, session(server, user, run.session_id), run)


@pytest.mark.parametrize("name", ALL)
def test_a_file_the_model_writes_exists_and_the_answer_follows(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "file_write", tmp_path)
    assert run.code == 0, run.stderr
    assert (run.cwd / "notes.txt").read_text() == "written by the model\n"
    record = session(server, user, run.session_id)
    assert assistant_texts(record)[-1] == "I wrote notes.txt."
    check_totals(name, record, run)


@pytest.mark.parametrize("name", ALL)
def test_a_model_api_error_fails_the_session_with_the_clis_exit_code(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "api_error", tmp_path)
    assert run.code != 0, run.stderr
    record = session(server, user, run.session_id)
    assert record["status"] == "failed" and record["exit_code"] == run.code
    shown = [m["content"] or "" for m in record["messages"]]
    assert any("this scenario always fails" in text for text in shown), shown


@pytest.mark.parametrize("name", [cli("claude")])
def test_claudes_partial_messages_give_the_same_single_row_as_without(server, tokens, name, tmp_path):
    runner, user = tokens
    run = runs.through_turnlog(server, runner, name, "plain", tmp_path, extra=["--include-partial-messages"])
    assert run.code == 0, run.stderr
    assert sum(1 for line in run.lines if line.get("type") == "stream_event") >= 6
    record = session(server, user, run.session_id)
    assert assistant_texts(record) == ["Hello, turnlog! This is a plain answer."]
    check_totals(name, record, run)


def runs_model_calls(run):
    return [r for r in run.requests if isinstance(r["body"], dict) and r["body"].get("tools")]
