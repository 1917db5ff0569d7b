"""The captures of the real CLIs (tests/fixtures/captures), posted to a session of their
provider: the transcript holds the answers the scenario gave, one row each, and its usage
agrees with the CLI's own totals (Claude's `result.usage` per turn, the last Codex
`turn.completed` of the thread, Gemini's `result.stats` per run)."""
import json
from pathlib import Path

import pytest

from app.client.usage import Reports
from app.ui.figures import TOKEN_SOURCES
from tests.agents import scenarios
from tests.agents.totals import claude_cost
from tests.agents.totals import cli_totals
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines
from tests.e2e.test_stream_replay import parse_sse

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "captures"
FILES = sorted(CAPTURES.glob("*/*.jsonl"))
# Capture name -> the scenario it played, where the two differ.
PLAYED = {"partial_messages": "slow", "interactive_permission": "permission", "interactive_multi_turn": "multi_turn"}
# What an error scenario's transcript shows (any of): the CLIs reword some errors, Gemini
# CLI says a spent daily quota in its own words.
ERROR_SHOWN = {"api_error": ("this scenario always fails",), "usage_limit": ("usage limit", "daily quota")}


# An ordinary session and an autonomous one (a workflow's: flush_policy.policy_for), as
# the public fixtures' tests post them; bench/captures_report.py posts every kind.
KINDS = {"agent": ("agent", {}), "workflow": ("workflow", {"workflow_id": "wf-captures"})}
# The shell scenarios' evidence: the command, and whether it failed.
SHELL = {"shell_ok": ("echo turnlog-shell-ok", "turnlog-shell-ok", False),
         "shell_fail": ("ls /turnlog-no-such-dir", "cannot access", True)}
SHELL_FILES = [path for path in FILES if path.stem in SHELL]


def cli_of(path):
    return path.parent.name.rsplit("-", 1)[0]


def _id(path):
    return f"{path.parent.name}/{path.stem}"


def lines_of(path):
    return path.read_text(encoding="utf-8").splitlines()


def answers(path):
    """The text each turn of the scenario ends with, or its error message."""
    scenario = scenarios.load(PLAYED.get(path.stem, path.stem))
    found = []
    for turn in scenario["turns"]:
        last = turn["replies"][-1]
        last = last.get("then", last)
        found.append(last["error"]["message"] if "error" in last else last["text"])
    return found


def posted(client, path, kind="agent"):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, dict(context), provider=cli_of(path))
    assert post_lines(client, sid, lines_of(path)).status_code == 200
    assert complete(client, sid, 0).status_code == 200
    return get_session(client, sid)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", FILES, ids=[_id(path) for path in FILES])
def test_a_capture_gives_one_row_per_answer_the_model_gave(client, path, kind):
    session = posted(client, path, kind)
    rows = [(m["role"], m["content"] or "") for m in session["messages"]]
    said = [text for role, text in rows if role == "assistant" and text.strip()]
    expected = answers(path)
    if path.stem in ERROR_SHOWN:
        assert any(shown in text.lower() for _, text in rows for shown in ERROR_SHOWN[path.stem]), rows
    elif path.stem == "sub_agent":
        # The sub-agent's answer and the main agent's, in the row of the turn that ran
        # it; its finish is a note of its own, with the sub-agent's summary.
        assert all(answer in "\n".join(said) for answer in expected)
        assert ("system", f"Background task completed: {expected[-1]}") in rows
    else:
        assert said == expected
    # every row counts: the prompts of a session driven over stdin are user rows (issue 30)
    assert session["message_count"] == len(rows)
    if path.stem != "sub_agent":
        assert session["conversation_turn_count"] == len(expected)
    else:  # the answer to the finished task is a turn of its own, with its own result line
        results = [line for line in lines_of(path) if json.loads(line).get("type") == "result"]
        assert session["conversation_turn_count"] == len(results) == 2


@pytest.mark.parametrize("path", FILES, ids=[_id(path) for path in FILES])
def test_a_captures_transcript_usage_is_the_clis_own_total(client, path):
    session = posted(client, path)
    usage = session["transcript_usage"]
    objs = [json.loads(line) for line in lines_of(path)]
    all_input, cached, output = cli_totals(cli_of(path), objs)
    assert usage["output_tokens"] == output
    assert usage["cache_read_input_tokens"] == cached
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"] \
        == all_input


def _all_input(usage):
    """All input under Claude's names: what is not read from the cache, and what is."""
    return (usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0)
            + usage.get("cache_creation_input_tokens", 0))


def _turn_figures(client, sid):
    """(all input, cached, output) summed over the turns' own usage as `/events` tells
    each turn's close (a turn that wrote no row too), in the session's terms."""
    body = client.get(f"/api/remote/sessions/{sid}/events").get_data(as_text=True)
    closes = [data for name, _, data in parse_sse(body) if name == "turn.completed"]
    totals = [0, 0, 0]
    for close in closes:
        usage = dict(close["usage"])
        cached = usage.pop("cached_input_tokens", 0)  # a part of Codex's and Gemini's input
        totals[0] += _all_input(usage)
        totals[1] += usage.get("cache_read_input_tokens", 0) + cached
        totals[2] += usage.get("output_tokens", 0)
    return tuple(totals)


@pytest.mark.parametrize("path", FILES, ids=[_id(path) for path in FILES])
def test_every_figure_of_a_captures_usage_agrees_with_the_clis_own(client, path):
    """Per turn (/events), per session (GET), in the list and on the page's header."""
    session = posted(client, path)
    sid = session["session_id"]
    objs = [json.loads(line) for line in lines_of(path)]
    cli = cli_totals(cli_of(path), objs)

    assert _turn_figures(client, sid) == cli
    listed = client.get("/api/remote/sessions").get_json()["sessions"]
    [entry] = [item for item in listed if item["session_id"] == sid]
    assert entry["transcript_usage"] == session["transcript_usage"]
    usage = session["transcript_usage"]
    assert (_all_input(usage), usage["cache_read_input_tokens"], usage["output_tokens"]) == cli
    page = client.get(f"/sessions/{sid}/counters").get_json()
    # no usage report was posted: the page's one figure is the turns' all input and output
    assert page["tokens"] == _all_input(usage) + usage["output_tokens"] == cli[0] + cli[2]
    # and the figure stays once the reports the runner makes of these lines come
    reports = Reports(cli_of(path))
    made = [report for report in (reports.report({"seq": seq, "stream": "stdout", "data": line})
                                  for seq, line in enumerate(lines_of(path))) if report]
    if made:
        assert client.post(f"/api/remote/sessions/{sid}/usage-reports",
                           json={"reports": made}).status_code == 200
        page = client.get(f"/sessions/{sid}/counters").get_json()
        assert page["tokens"] == cli[0] + cli[2]
        counted = any(report["input_tokens"] + report["output_tokens"] for report in made)
        assert page["tokens_title"] == TOKEN_SOURCES["reported" if counted else "transcript"]


@pytest.mark.parametrize("path", SHELL_FILES, ids=[_id(path) for path in SHELL_FILES])
def test_a_captured_shell_command_is_evidence_with_its_output_and_outcome(client, path):
    """The command the model ran, its output, and its failure: an exit code and an error
    from Claude and Codex; Gemini CLI prints neither (docs/agents.md), only the output."""
    command, output, failed = SHELL[path.stem]
    sid = posted(client, path)["session_id"]
    [record] = client.get(f"/api/remote/sessions/{sid}/evidence").get_json()["evidence"]
    assert command in record["command"] and output in record["output_head"]
    if cli_of(path) == "gemini":
        assert (record["exit_code"], record["is_error"]) == (None, False)
    else:
        assert record["is_error"] is failed
        assert (record["exit_code"] or 0) != 0 if failed else record["exit_code"] in (0, None)


CLAUDE_FILES = [path for path in FILES if cli_of(path) == "claude"]


# Claude's `total_cost_usd` is the session's running cost: in `multi_turn`,
# `interactive_multi_turn` and `sub_agent` a second result goes on from the first, and
# the transcript counts each turn's step from it, so the sum is Claude's last total.
@pytest.mark.parametrize("path", CLAUDE_FILES, ids=[_id(path) for path in CLAUDE_FILES])
def test_a_claude_captures_transcript_cost_is_claudes_own(client, path):
    session = posted(client, path)
    own = claude_cost([json.loads(line) for line in lines_of(path)])
    assert session["transcript_usage"]["total_cost_usd"] == pytest.approx(own, abs=1e-9)
