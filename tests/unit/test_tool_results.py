"""Tool results read from closed turns (app/transcript/evidence.py tool_result_items): the
same for every provider, bounded, and none for a shell-only reading. Pure."""
from pathlib import Path

import pytest

from app.providers import get_parser
from app.transcript.evidence import bounded_input
from app.transcript.evidence import bounded_text
from app.transcript.flush_policy import ORDINARY
from app.transcript.open_turn import OpenTurn
from tests import claude_lines as cl

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
STAMP = "2026-03-01T12:00:00.000000Z"


def fed_all(provider, lines, max_bytes=64 * 1024):
    """(the tool result items, the drafts) of `lines` fed to a fresh open turn, then closed."""
    turn = OpenTurn(policy=ORDINARY, tool_result_bytes=max_bytes)
    parse = get_parser(provider)
    items, drafts = [], []
    for index, line in enumerate(lines):
        fed = turn.feed(parse(line), index, STAMP, line)
        items.extend({**item, "place": len(drafts) + item["place"]} for item in fed.tool_results)
        drafts.extend(fed.drafts)
    closed = turn.close(STAMP)
    items.extend({**item, "place": len(drafts) + item["place"]} for item in closed.tool_results)
    drafts.extend(closed.drafts)
    return items, drafts


def capture(name):
    return (CAPTURES / name).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("name, provider, tool, failed, output_start", [
    ("claude-2.1.328/shell_ok.jsonl", "claude", "Bash", False, ""),
    ("claude-2.1.328/shell_fail.jsonl", "claude", "Bash", True, "Exit code 2"),
    ("codex-0.169.0/shell_fail.jsonl", "codex", "command_execution", True, ""),
    ("gemini-0.61.0/shell_ok.jsonl", "gemini", "run_shell_command", False, ""),
])
def test_each_provider_gives_its_calls_with_their_results(name, provider, tool, failed,
                                                          output_start):
    items, drafts = fed_all(provider, capture(name))
    first = items[0]
    assert (first["name"], first["has_result"], first["is_error"]) == (tool, True, failed)
    assert first["output"].startswith(output_start)
    assert first["output_bytes"] == len(first["output"].encode()) and not first["truncated"]
    # each item names the draft of its turn
    assert all(drafts[item["place"]] is None or drafts[item["place"]].turn_key == item["turn_id"]
               for item in items)


def test_a_tool_only_turn_has_no_draft_but_its_calls_and_results():
    items, drafts = fed_all("claude", [
        cl.assistant(cl.tool_use("toolu_r", "Read", {"file_path": "README.md"})),
        cl.tool_result("toolu_r", "# demo\n", is_error=False), cl.result()])
    assert drafts == [None]
    [item] = items
    assert item == {"turn_id": item["turn_id"], "tool_use_id": "toolu_r", "name": "Read",
                    "input": {"file_path": "README.md"}, "has_result": True, "is_error": False,
                    "output": "# demo\n", "output_bytes": 7, "truncated": False, "place": 0}


def test_a_codex_file_change_lists_its_changes_as_its_result():
    lines = ['{"type": "turn.started"}',
             '{"type": "item.completed", "item": {"id": "item_0", "type": "file_change",'
             ' "changes": [{"path": "notes.txt", "kind": "add"}], "status": "completed"}}',
             '{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}']
    [item], _ = fed_all("codex", lines)
    assert (item["name"], item["output"], item["is_error"]) == ("file_change", "add notes.txt", False)


def test_a_call_without_its_result_and_a_result_without_its_call():
    items, _ = fed_all("claude", [
        cl.assistant(cl.tool_use("toolu_a", "Bash", {"command": "sleep 9"})),
        cl.tool_result("toolu_earlier", "late\n"), cl.result()])
    assert [(i["tool_use_id"], i["name"], i["has_result"]) for i in items] == [
        ("toolu_a", "Bash", False), ("toolu_earlier", None, True)]
    assert items[1]["input"] is None


def test_a_result_over_the_bound_keeps_its_first_and_last_bytes_and_its_size():
    text = "head\n" + "é" * 3000 + "\ntail: 1 failed"
    kept, size, cut = bounded_text(text, 512)
    assert (size, cut) == (len(text.encode()), True)
    assert len(kept.encode()) <= 512
    assert kept.startswith("head\n") and kept.endswith("tail: 1 failed")
    assert f"…[{size} bytes, {size - 512} cut]…" in kept
    assert bounded_text("small", 512) == ("small", 5, False)
    assert bounded_text(text, 0) == (text, len(text.encode()), False)  # 0: no bound


def test_an_input_over_the_bound_keeps_its_scalar_fields_cut_short():
    big = {"file_path": "a.py", "content": "x" * 5000, "nested": {"deep": 1}, "replace_all": True}
    kept = bounded_input(big, 1024)
    assert kept["file_path"] == "a.py" and kept["replace_all"] is True
    assert len(kept["content"]) == 1025 and "nested" not in kept
    assert kept["truncated"] is True and kept["input_bytes"] > 5000
    assert bounded_input({"command": "ls"}, 1024) == {"command": "ls"}
    assert bounded_input(None, 1024) == {}


def test_the_evidence_backfill_reading_gives_no_tool_results():
    turn = OpenTurn.for_evidence()
    parse = get_parser("claude")
    lines = capture("claude-2.1.328/shell_ok.jsonl")
    fed = [turn.feed(parse(line), n, STAMP, line) for n, line in enumerate(lines)]
    assert all(f.tool_results == () or f.tool_results == [] for f in fed)
