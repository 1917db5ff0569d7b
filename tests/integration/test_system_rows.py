"""System lines: what says something becomes a system row, the rest stays in the buffer."""
import json

import pytest

from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


@BOTH_KINDS
def test_system_init_is_summarised(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.system_init()])

    [row] = messages(sid)
    assert row["role"] == "system"
    assert row["content"] == (
        "Session started: model=claude-sonnet-4-5, cwd=/repo, tools=2, mcp_servers=0")
    assert row["metadata"] == {"subtype": "init"}
    assert row["source"] == "remote_live"
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_system_line_without_text_writes_no_row(kind, new_session, feed, messages, outputs,
                                                counts):
    sid = new_session(kind)
    line = json.dumps({"type": "system", "subtype": "hook_started", "uuid": "hook-1"})
    receipt = feed(sid, [line])

    assert messages(sid) == []
    assert receipt.messages_written == 0
    assert [payload for _, _, payload, _ in outputs(sid)] == [line]
    assert counts(sid) == (0, 0)


@BOTH_KINDS
def test_runner_system_stream_is_a_system_row(kind, new_session, feed, messages, outputs,
                                              counts):
    sid = new_session(kind)
    feed(sid, ["  sandbox ready  \n"], stream="system")

    [row] = messages(sid)
    assert (row["role"], row["content"]) == ("system", "sandbox ready")
    assert row["metadata"] == {"subtype": "runner"}
    assert outputs(sid)[0][1] == "system"
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_stderr_goes_to_the_buffer_only(kind, new_session, feed, messages, outputs, counts):
    sid = new_session(kind)
    line = cl.assistant(cl.text("Looks like a turn, but on stderr."))
    receipt = feed(sid, [line, "warning: low disk"], stream="stderr")

    assert messages(sid) == []
    assert receipt.accepted == 2
    assert [(stream, payload) for _, stream, payload, _ in outputs(sid)] == [
        ("stderr", line), ("stderr", "warning: low disk")]
    assert counts(sid) == (0, 0)


@BOTH_KINDS
def test_system_line_inside_a_turn_leaves_the_turn_whole(kind, new_session, feed, messages,
                                                         counts):
    sid = new_session(kind)
    feed(sid, [
        cl.assistant(cl.text("Before."), uuid="a-1"),
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "s-9"}),
        cl.assistant(cl.text("After."), uuid="a-2"),
        cl.result(),
    ])

    assert [(m["role"], m["content"]) for m in messages(sid)] == [
        ("system", "Conversation compacted"), ("assistant", "Before.\n\nAfter.")]
    assert counts(sid) == (2, 2)


def test_blank_runner_line_writes_no_row(new_session, feed, messages, outputs):
    sid = new_session("ordinary")
    feed(sid, ["   "], stream="system")

    assert messages(sid) == []
    assert len(outputs(sid)) == 1
