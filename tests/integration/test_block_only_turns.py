"""Tool-only and thinking-only turns, and user tool_results: where the session kinds differ.

Ordinary sessions keep a transcript a person reads: no row for a turn without
text, and tool results never appear. Autonomous sessions (a workflow with a
workflow_id) keep evidence: a block-only turn is a row with content "", and
tool results are folded into the turn's blocks.
"""
import pytest

from tests import claude_lines as cl

OTHER_ORDINARY_KINDS = ["chat", "terminal", "workflow_without_id", "agent_with_workflow_id"]
USE = cl.tool_use("toolu_1", "Bash", {"command": "ls"})
THINK = cl.thinking("Maybe the tests dir.")
LOOKING = cl.text("Looking.")
FOUND = cl.text("Found it.")
RESULT_BLOCK = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md\n",
                "is_error": False}


@pytest.mark.parametrize("kind", OTHER_ORDINARY_KINDS)
def test_tool_only_turn_writes_nothing_for_other_ordinary_types(kind, new_session, feed,
                                                                messages, counts, session_row):
    sid = new_session(kind)
    receipt = feed(sid, [cl.assistant(USE), cl.tool_result("toolu_1"), cl.result()])

    assert messages(sid) == []
    assert receipt.messages_written == 0
    assert counts(sid) == (0, 0)
    assert session_row(sid)["next_event_index"] == 3


@pytest.mark.parametrize("kind, expected", [
    ("ordinary", []),
    ("autonomous", [("assistant", "", [USE, RESULT_BLOCK])]),
])
def test_tool_only_turn(kind, expected, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(USE), cl.tool_result("toolu_1"), cl.result()])

    assert [(m["role"], m["content"], m["content_blocks"]) for m in messages(sid)] == expected
    assert counts(sid) == (len(expected), len(expected))


@pytest.mark.parametrize("kind, expected", [
    ("ordinary", []),
    ("autonomous", [("assistant", "", [THINK])]),
])
def test_thinking_only_turn(kind, expected, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(THINK), cl.result()])

    assert [(m["role"], m["content"], m["content_blocks"]) for m in messages(sid)] == expected
    assert counts(sid) == (len(expected), len(expected))


def test_autonomous_block_only_row_keeps_blocks_in_metadata(new_session, feed, messages):
    sid = new_session("autonomous")
    feed(sid, [cl.assistant(THINK), cl.assistant(USE), cl.result()])

    [row] = messages(sid)
    assert row["source"] == "remote_live"
    assert row["content_blocks"] == row["metadata"]["content_blocks"] == [THINK, USE]
    assert row["metadata"]["trigger"] == "result"


@pytest.mark.parametrize("kind, expected_blocks", [
    ("ordinary", [LOOKING, USE, FOUND]),
    ("workflow_without_id", [LOOKING, USE, FOUND]),
    ("agent_with_workflow_id", [LOOKING, USE, FOUND]),
    ("autonomous", [LOOKING, USE, RESULT_BLOCK, FOUND]),  # in arrival order
])
def test_user_tool_result_is_ignored_or_folded(kind, expected_blocks, new_session, feed,
                                               messages, counts):
    sid = new_session(kind)
    feed(sid, [
        cl.assistant(LOOKING, USE),
        cl.tool_result("toolu_1", "README.md\n"),
        cl.assistant(FOUND),
        cl.result(),
    ])

    [row] = messages(sid)
    assert row["content"] == "Looking.\n\nFound it."
    assert row["content_blocks"] == expected_blocks
    assert row["metadata"]["content_blocks"] == expected_blocks
    assert counts(sid) == (1, 1)


@pytest.mark.parametrize("kind, expected", [("ordinary", 0), ("autonomous", 1)])
def test_block_only_turn_closed_by_completion(kind, expected, new_session, feed, complete,
                                              messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(USE)])
    complete(sid)

    stored = messages(sid)
    assert len(stored) == expected
    assert all(m["content"] == "" and m["metadata"]["trigger"] == "completion" for m in stored)
    assert counts(sid) == (expected, expected)
