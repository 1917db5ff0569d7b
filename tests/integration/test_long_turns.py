"""A long open turn is saved append-only: the per-request state stays small."""
import pytest

from tests import claude_lines as cl

REQUESTS = 40
BIG = "x" * 20_000  # a large tool output, as a long autonomous run produces


@pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
def test_state_stays_small_while_parts_grow_and_are_released_at_flush(kind, new_session, feed,
                                                                       rows, messages, counts):
    sid = new_session(kind)
    header_sizes = []
    for n in range(REQUESTS):
        feed(sid, [cl.assistant(cl.text(f"step {n}"), cl.tool_use(f"t{n}")),
                   cl.tool_result(f"t{n}", BIG)])
        header_sizes.append(rows("SELECT LENGTH(turn_state) FROM agent_sessions "
                                 "WHERE session_id = ?", sid)[0][0])
    parts = rows("SELECT part_index FROM session_turn_parts WHERE session_id = ? "
                 "ORDER BY part_index", sid)
    assert [p[0] for p in parts] == list(range(3 * REQUESTS))  # text, tool_use, tool_result
    # The header holds ids and ranges only: it does not grow with the turn's content.
    assert max(header_sizes) < 20_000
    assert header_sizes[-1] - header_sizes[REQUESTS // 2] < 4_000

    feed(sid, [cl.result()])

    [row] = messages(sid)
    assert row["content"] == "\n\n".join(f"step {n}" for n in range(REQUESTS))
    kept = [b["type"] for b in row["content_blocks"]]
    expected = ["text", "tool_use", "tool_result"] if kind == "autonomous" else ["text", "tool_use"]
    assert kept == expected * REQUESTS
    assert rows("SELECT COUNT(*) FROM session_turn_parts WHERE session_id = ?", sid)[0][0] == 0
    assert counts(sid) == (1, 1)
