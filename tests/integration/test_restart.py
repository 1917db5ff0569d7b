"""The open turn lives in the database: a new process picks it up where the old one stopped."""
import pytest

from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


@BOTH_KINDS
def test_restart_mid_turn_keeps_every_line_once(kind, new_session, feed, restart, messages,
                                                counts):
    sid = new_session(kind)
    use = cl.tool_use("toolu_4")
    half = [cl.assistant(cl.text("Part one."), uuid="a-1"), cl.assistant(use, uuid="a-2")]
    feed(sid, half)
    assert messages(sid) == []

    restart()
    resent = feed(sid, half, seq=0)  # the runner re-sends what it was unsure of
    feed(sid, [cl.assistant(cl.text("Part two."), uuid="a-3"), cl.result(uuid="r-1")])

    assert resent.duplicates == 2
    [row] = messages(sid)
    assert row["content"] == "Part one.\n\nPart two."
    assert row["content_blocks"] == [cl.text("Part one."), use, cl.text("Part two.")]
    assert row["metadata"]["event_range"] == [0, 3]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_restart_then_complete_flushes_the_stored_turn(kind, new_session, feed, complete,
                                                       restart, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Unfinished."))])

    restart()
    complete(sid)

    assert [(m["content"], m["metadata"]["trigger"]) for m in messages(sid)] == [
        ("Unfinished.", "completion")]
    assert counts(sid) == (1, 1)


def test_restart_continues_event_numbering(new_session, feed, restart, outputs):
    sid = new_session("ordinary")
    feed(sid, ["a", "b"])

    restart()
    receipt = feed(sid, ["c"])

    assert receipt.last_event_index == 2
    assert [(i, p) for i, _, p, _ in outputs(sid)] == [(0, "a"), (1, "b"), (2, "c")]
