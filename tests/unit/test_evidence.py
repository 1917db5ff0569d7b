"""The evidence record, read from turns on fakes: what each shell command becomes."""
import json
from datetime import datetime
from datetime import timezone
from pathlib import Path

import pytest

from app.core.records import Chunk
from app.services import evidence as evidence_service
from app.services.ingest import complete_session
from app.services.ingest import ingest_output
from app.transcript.evidence import EXCERPT_BYTES
from app.transcript.evidence import EvidenceLines
from app.transcript.evidence import command_line
from app.transcript.evidence import evidence_items
from app.transcript.evidence import excerpt
from app.transcript.evidence import exit_code_in
from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.turns import Turn
from tests.fakes import FakeUnitOfWork

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
FIXTURES = sorted(STREAMS.glob("*/*.jsonl"))
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
STAMP = "2026-01-02T03:04:05.000000Z"


def ingested(path, batch=1000, session_type="agent"):
    """A fake unit of work after the fixture's lines (`batch` per request) and completion."""
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, session_type, {"workflow_id": "wf"} if session_type == "workflow"
                     else {}, path.parent.name, STAMP)
    lines = path.read_text().splitlines()
    for at in range(0, len(lines), batch):
        chunks = [Chunk(line, "stdout", at + n) for n, line in enumerate(lines[at:at + batch])]
        ingest_output("s1", chunks, uow, retention_seconds=60, clock=lambda: NOW)
    complete_session("s1", 0, uow, clock=lambda: NOW)
    return uow


def without_turn(stored):
    return [{key: value for key, value in vars(row).items()
             if key not in ("id", "session_id", "turn_id", "created_at")} for row in stored]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_each_fixture_yields_its_expected_evidence_however_its_lines_are_batched(path, batch):
    expected = json.loads(path.with_suffix(".evidence.json").read_text())
    assert without_turn(ingested(path, batch).evidence.rows) == expected


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_item_names_a_turn_the_session_closed_and_follows_run_order(path):
    uow = ingested(path, session_type="workflow")
    rows = uow.evidence.rows
    assert {row.turn_id for row in rows} <= {key for _, key in uow.turns.keys}
    assert [row.event_range[0] for row in rows] == sorted(row.event_range[0] for row in rows)
    row_turns = {m.metadata.get("turn_id") for m in uow.messages.rows}
    assert {row.turn_id for row in rows} <= row_turns  # the autonomous policy writes every turn


def test_the_transcript_is_the_same_with_and_without_the_evidence_record(monkeypatch):
    path = STREAMS / "claude" / "test_runs.jsonl"
    with_evidence = ingested(path).messages.rows
    monkeypatch.setattr(EvidenceLines, "take", lambda self, turn: [])
    assert ingested(path).messages.rows == with_evidence


def test_the_evidence_state_is_kept_only_while_a_command_is_open():
    path = STREAMS / "claude" / "test_runs.jsonl"
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", STAMP)
    lines = path.read_text().splitlines()
    ingest_output("s1", [Chunk(line, "stdout", n) for n, line in enumerate(lines[:4])], uow,
                  retention_seconds=60, clock=lambda: NOW)
    assert uow.turn_states.load("s1")["evidence"] == {"toolu_01PY": [3, 3, None]}
    ingest_output("s1", [Chunk(line, "stdout", n + 4) for n, line in enumerate(lines[4:11])],
                  uow, retention_seconds=60, clock=lambda: NOW)
    assert "evidence" not in uow.turn_states.load("s1")
    assert [row.evidence_id for row in uow.evidence.rows] == ["toolu_01PY", "toolu_01GS"]


def turn(blocks, key="turn:a", event_range=(0, 9)):
    return TranscriptTurn.from_turn(Turn(key, tuple(blocks), (), "result", {}, *event_range))


def bash(tool_id, command, name="Bash"):
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"command": command}}


def result(tool_id, content, is_error=False):
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": is_error}


def test_other_tools_are_no_evidence_and_a_command_without_result_keeps_its_place():
    items = evidence_items(turn([
        {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "x"}},
        result("r1", "text"), bash("b1", "make"), bash("b2", "ls"), result("b2", "a\nb\n")]))
    assert [(i["evidence_id"], i["output_head"], i["is_error"]) for i in items] == [
        ("b1", "", False), ("b2", "a\nb\n", False)]
    assert items[0]["event_range"] == [0, 9]  # no line range noted: the turn's


def test_result_content_parts_are_read_as_text_and_summarised():
    items = evidence_items(turn([bash("b1", "pytest -q"),
                                 result("b1", [{"type": "text", "text": "3 passed in 0.01s"}])]))
    assert items[0]["output_head"] == "3 passed in 0.01s"
    assert items[0]["test_summary"]["passed"] == 3


def test_a_long_output_keeps_its_first_and_last_excerpt_cut_on_characters():
    output = "é" * EXCERPT_BYTES + "middle" + "ü" * EXCERPT_BYTES
    head, tail, size = excerpt(output)
    assert size == len(output.encode()) and size > 2 * EXCERPT_BYTES
    assert len(head.encode()) <= EXCERPT_BYTES and set(head) == {"é"}
    assert len(tail.encode()) <= EXCERPT_BYTES and set(tail) == {"ü"}
    assert excerpt("short") == ("short", "", 5)


def test_a_test_summary_is_read_from_the_whole_output_not_the_excerpt():
    output = "x" * (3 * EXCERPT_BYTES) + "\n2 failed, 5 passed in 1.0s\n" + "y" * (3 * EXCERPT_BYTES)
    items = evidence_items(turn([bash("b1", "pytest"), result("b1", output, True)]))
    assert items[0]["test_summary"]["failed"] == 2
    assert "passed" not in items[0]["output_head"] + items[0]["output_tail"]


def test_claude_s_exit_code_prefix_counts_on_failed_results_only():
    assert exit_code_in("Exit code 2\nmake: *** [all] Error 2", True) == 2
    assert exit_code_in("Exit code 2\n", False) is None
    assert exit_code_in("error: Exit code 2", True) is None


def test_an_argv_command_is_quoted_into_one_line():
    assert command_line({"command": ["bash", "-lc", "echo 'hi there'"]}, "command") == \
        "bash -lc 'echo '\"'\"'hi there'\"'\"''"
    assert command_line({"command": 7}, "command") == ""
    assert command_line(None, "command") == ""


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_backfill_reads_the_retained_buffer_into_the_turns_the_session_stored(path):
    uow = ingested(path)
    live = [(row.turn_id, *without_turn([row])) for row in uow.evidence.rows]
    uow.evidence.rows = []
    assert evidence_service.backfill(uow, clock=lambda: NOW) == len(live)
    assert [(row.turn_id, *without_turn([row])) for row in uow.evidence.rows] == live
    assert evidence_service.backfill(uow, clock=lambda: NOW) == 0  # already there


def test_backfill_skips_a_turn_whose_first_lines_left_the_buffer():
    uow = ingested(STREAMS / "claude" / "test_runs.jsonl")
    uow.evidence.rows = []
    uow.outputs.forget_before("s1", 4)  # the first turn's opening lines are gone
    evidence_service.backfill(uow, clock=lambda: NOW)
    assert [row.evidence_id for row in uow.evidence.rows] == ["toolu_01JS"]


def test_backfill_closes_a_completed_session_s_last_turn_as_its_completion_did():
    from tests import claude_lines as cl

    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", STAMP)
    lines = [cl.assistant(cl.tool_use("b1", "Bash", {"command": "make"})),
             cl.tool_result("b1", "Exit code 2\nmake: *** [all] Error 2", True)]
    ingest_output("s1", [Chunk(line, "stdout", n) for n, line in enumerate(lines)], uow,
                  retention_seconds=60, clock=lambda: NOW)
    complete_session("s1", 1, uow, clock=lambda: NOW)
    live = [(row.turn_id, row.exit_code) for row in uow.evidence.rows]
    uow.evidence.rows = []
    evidence_service.backfill(uow, clock=lambda: NOW)
    assert [(row.turn_id, row.exit_code) for row in uow.evidence.rows] == live
    assert live and live[0][1] == 2


def test_a_long_command_is_cut_like_the_output():
    heredoc = "cat > big.txt <<'EOF'\n" + "é" * 50_000 + "\nEOF"
    [item] = evidence_items(turn([bash("t1", heredoc)]))
    size = len(heredoc.encode())
    assert len(item["command"].encode()) < 2 * EXCERPT_BYTES + 64
    assert item["command"].startswith("cat > big.txt <<'EOF'\n") and item["command"].endswith("\nEOF")
    head, tail = item["command"].split(" …[")[0], item["command"].split("]… ")[1]
    cut = int(item["command"].split(" …[")[1].split(" bytes cut")[0])
    assert len(head.encode()) + cut + len(tail.encode()) == size
    short = "echo " + "x" * (2 * EXCERPT_BYTES - 5)  # exactly 2 excerpts: kept whole
    [kept] = evidence_items(turn([bash("t2", short)]))
    assert kept["command"] == short
