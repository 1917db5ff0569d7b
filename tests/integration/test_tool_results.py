"""Tool output on a real database (issue 32): every tool call of a closed turn is kept in
session_tool_results with the result that answers it, for every provider and session kind,
while the transcript's rows and counters stay as the flush policy says. Read back with SQL."""
import json
from pathlib import Path

import pytest

from tests import claude_lines as cl

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
TOOL_COLUMNS = ("turn_id, tool_use_id, tool_name, tool_input, has_result, is_error, output,"
                " output_bytes, truncated, message_id, after_message_id")


def lines_of(name):
    return (CAPTURES / name).read_text(encoding="utf-8").splitlines()


def tool_rows(rows, sid):
    found = rows(f"SELECT {TOOL_COLUMNS} FROM session_tool_results WHERE session_id = ?"
                 " ORDER BY id", sid)
    names = [name.strip() for name in TOOL_COLUMNS.split(",")]
    return [dict(zip(names, row)) for row in found]


def counters(rows, sid):
    return rows("SELECT message_count, conversation_turn_count, visible_message_count"
                " FROM agent_sessions WHERE session_id = ?", sid)[0]


def message_ids(rows, sid):
    return [row_id for (row_id,) in rows(
        "SELECT id FROM session_messages WHERE session_id = ? ORDER BY id", sid)]


@pytest.fixture
def claude_session(app):
    from app.db import writing
    from app.services import sessions

    def create(kind="ordinary", provider="claude"):
        session_type, context = {"ordinary": ("agent", {}),
                                 "autonomous": ("workflow", {"workflow_id": "wf-1"})}[kind]
        return sessions.open_session({"session_type": session_type, "context": context,
                                      "provider": provider}, writing()).session_id
    return create


def test_a_tool_only_turn_of_an_ordinary_session_writes_no_row_but_keeps_its_result(
        app, claude_session, feed, rows):
    sid = claude_session()
    feed(sid, [cl.system_init(), cl.assistant(cl.text("Looking.")), cl.result()])
    before = counters(rows, sid)
    [note_id, text_id] = message_ids(rows, sid)
    feed(sid, [cl.assistant(cl.tool_use("toolu_r", "Read", {"file_path": "README.md"}),
                            message_id="msg_2"),
               cl.tool_result("toolu_r", "# demo\n"), cl.result()])
    after = counters(rows, sid)
    assert message_ids(rows, sid) == [note_id, text_id]  # no row for the tool-only turn
    assert after[0] == before[0] and after[2] == before[2]  # message counts unchanged
    assert after[1] == before[1] + 1  # it is a turn
    [stored] = tool_rows(rows, sid)
    assert stored["tool_use_id"] == "toolu_r" and stored["tool_name"] == "Read"
    assert json.loads(stored["tool_input"]) == {"file_path": "README.md"}
    assert (stored["has_result"], stored["is_error"], stored["output"]) == (1, 0, "# demo\n")
    assert stored["message_id"] is None and stored["after_message_id"] == text_id
    assert stored["turn_id"].startswith("turn:")
    # the turn is known in session_turns under the same key
    assert rows("SELECT COUNT(*) FROM session_turns WHERE session_id = ? AND turn_key = ?",
                sid, stored["turn_id"]) == [(1,)]


def test_a_turn_with_text_names_its_row_and_user_results_stay_out_of_it(
        app, claude_session, feed, rows):
    sid = claude_session()
    feed(sid, lines_of("claude-2.1.328/shell_fail.jsonl"))
    [(row_id, blocks)] = rows("SELECT id, content_blocks FROM session_messages WHERE"
                              " session_id = ? AND role = 'assistant'", sid)
    assert "tool_result" not in blocks  # the policy: ordinary rows drop tool_result blocks
    [stored] = tool_rows(rows, sid)
    assert stored["tool_name"] == "Bash" and stored["is_error"] == 1
    assert stored["output"].startswith("Exit code 2\nls: cannot access")
    assert (stored["message_id"], stored["after_message_id"]) == (row_id, row_id)


def test_an_autonomous_block_only_turn_keeps_its_row_and_its_results_name_it(
        app, claude_session, feed, rows):
    sid = claude_session("autonomous")
    feed(sid, [cl.assistant(cl.tool_use("toolu_1", "Bash", {"command": "ls"})),
               cl.tool_result("toolu_1", "README.md\n"), cl.result()])
    [(row_id, content, blocks)] = rows("SELECT id, content, content_blocks FROM session_messages"
                                       " WHERE session_id = ? AND role = 'assistant'", sid)
    assert content == "" and "tool_result" in blocks  # folded in, as before
    [stored] = tool_rows(rows, sid)
    assert (stored["message_id"], stored["output"]) == (row_id, "README.md\n")


@pytest.mark.parametrize("capture, expected", [
    ("claude-2.1.328/shell_ok.jsonl", ("Bash", 0)),
    ("claude-2.1.328/shell_fail.jsonl", ("Bash", 1)),
    ("codex-0.169.0/shell_ok.jsonl", ("command_execution", 0)),
    ("codex-0.169.0/shell_fail.jsonl", ("command_execution", 1)),
    ("gemini-0.61.0/shell_ok.jsonl", ("run_shell_command", 0)),
    ("gemini-0.61.0/file_write.jsonl", ("write_file", 0)),
])
def test_each_provider_capture_keeps_its_tool_results_once_and_a_replay_adds_none(
        app, claude_session, feed, complete, rows, capture, expected):
    sid = claude_session(provider=capture.split("-")[0])
    lines = lines_of(capture)
    feed(sid, lines)
    first = tool_rows(rows, sid)
    feed(sid, lines)  # the whole stream again under new seqs: a copy, it writes nothing
    assert tool_rows(rows, sid) == first
    complete(sid)
    found = tool_rows(rows, sid)
    assert found and all(r["has_result"] == 1 for r in found), found
    assert (found[0]["tool_name"], found[0]["is_error"]) == expected
    stored = rows(f"SELECT {TOOL_COLUMNS} FROM session_tool_results WHERE session_id = ?", sid)
    size = rows("SELECT SUM(output_bytes) FROM session_tool_results WHERE session_id = ?", sid)
    assert size[0][0] == sum(len(r["output"].encode()) for r in found)
    # the same lines again under their seqs, then under new ones: nothing new
    feed(sid, lines, seq=0)
    assert rows(f"SELECT {TOOL_COLUMNS} FROM session_tool_results WHERE session_id = ?",
                sid) == stored


def test_a_result_over_the_bound_keeps_its_ends_and_says_how_big_it_was(
        app, claude_session, rows):
    from app.core.records import Chunk
    from app.db import writing
    from app.services import ingest

    sid = claude_session()
    output = "first line\n" + "x" * 5000 + "\n1 failed, 40 passed"
    lines = [cl.assistant(cl.tool_use("toolu_big", "Bash", {"command": "pytest"})),
             cl.tool_result("toolu_big", output), cl.result()]
    ingest.ingest_output(sid, [Chunk(line, "stdout", n) for n, line in enumerate(lines)],
                         writing(), retention_seconds=60, tool_result_max_bytes=1024)
    [stored] = tool_rows(rows, sid)
    assert stored["truncated"] == 1 and stored["output_bytes"] == len(output)
    assert len(stored["output"].encode()) <= 1024
    assert stored["output"].startswith("first line\n")
    assert stored["output"].endswith("1 failed, 40 passed")
    assert f"…[{len(output)} bytes" in stored["output"]


def test_a_result_of_a_call_made_in_an_earlier_turn_is_kept_in_its_own_turn(
        app, claude_session, feed, rows):
    sid = claude_session()
    feed(sid, [cl.assistant(cl.tool_use("toolu_late", "Bash", {"command": "sleep 9"})),
               cl.result()])
    feed(sid, [cl.tool_result("toolu_late", "done\n"), cl.assistant(cl.text("It finished."),
                                                                     message_id="msg_2"),
               cl.result()])
    call, answer = tool_rows(rows, sid)
    assert (call["tool_name"], call["has_result"], call["message_id"]) == ("Bash", 0, None)
    assert (answer["tool_name"], answer["tool_input"], answer["output"]) == (None, None, "done\n")
    assert answer["message_id"] == message_ids(rows, sid)[-1]


def test_tool_only_turns_sit_after_the_newest_row_however_the_lines_were_batched(
        app, claude_session, feed, rows):
    lines = [cl.assistant(cl.tool_use("toolu_a", "Read", {"file_path": "a"})),
             cl.tool_result("toolu_a", "A"), cl.result(),
             cl.assistant(cl.text("Read a."), message_id="msg_2"), cl.result(),
             cl.assistant(cl.tool_use("toolu_b", "Read", {"file_path": "b"}), message_id="msg_3"),
             cl.tool_result("toolu_b", "B"), cl.result()]
    places = []
    for batches in ([lines], [[line] for line in lines], [lines[:4], lines[4:6], lines[6:]]):
        sid = claude_session()
        for batch in batches:
            feed(sid, batch)
        ids = message_ids(rows, sid)
        places.append([(r["tool_use_id"], r["message_id"],
                        ids.index(r["after_message_id"]) if r["after_message_id"] else None)
                       for r in tool_rows(rows, sid)])
    assert places[0] == [("toolu_a", None, None), ("toolu_b", None, 0)]
    assert places[1] == places[0] and places[2] == places[0]
