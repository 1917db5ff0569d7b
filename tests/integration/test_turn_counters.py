"""conversation_turn_count and visible_message_count: exact, and once per turn_key."""
import pytest

from app.db import writing
from app.services import sessions
from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


@pytest.fixture
def counters(rows):
    """counters(sid): (conversation_turn_count, visible_message_count, message_count), after
    checking that they agree with the rows they count."""
    def read(session_id):
        (turns, visible, messages), = rows(
            "SELECT conversation_turn_count, visible_message_count, message_count"
            " FROM agent_sessions WHERE session_id = ?", session_id)
        (recorded,), = rows("SELECT COUNT(*) FROM session_turns WHERE session_id = ?",
                            session_id)
        (with_text,), = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ?"
                             " AND role = 'assistant' AND content <> ''", session_id)
        assert (turns, visible) == (recorded, with_text)
        return turns, visible, messages
    return read


def mixed_stream():
    """A text turn, a tool-only turn and a system line, with fixed uuids."""
    return [
        cl.system_init(uuid="c-sys"),
        cl.assistant(cl.text("Looking."), cl.tool_use("toolu_1"), uuid="c-a1"),
        cl.tool_result("toolu_1", uuid="c-u1"),
        cl.assistant(cl.text("Found it."), uuid="c-a2"),
        cl.result(uuid="c-r1"),
        cl.assistant(cl.tool_use("toolu_2"), uuid="c-a3"),
        cl.tool_result("toolu_2", uuid="c-u2"),
        cl.result(uuid="c-r2"),
    ]


@pytest.mark.parametrize("kind, expected", [("ordinary", (2, 1, 2)), ("autonomous", (2, 1, 3))])
def test_counters_after_a_mixed_stream(kind, expected, new_session, feed, complete, counters):
    sid = new_session(kind)
    feed(sid, mixed_stream())
    complete(sid)
    assert counters(sid) == expected


@BOTH_KINDS
def test_result_then_complete_counts_the_turn_once(kind, new_session, feed, complete, counters,
                                                   read_session):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("hi")), cl.result()])
    complete(sid)
    complete(sid)
    assert counters(sid) == (1, 1, 1)
    session = read_session(sid)
    assert (session.conversation_turn_count, session.visible_message_count) == (1, 1)


@BOTH_KINDS
def test_replay_under_new_seqs_counts_nothing_more(kind, new_session, feed, counters):
    sid = new_session(kind)
    feed(sid, mixed_stream())
    before = counters(sid)
    feed(sid, mixed_stream())
    feed(sid, mixed_stream(), seq=0)
    assert counters(sid) == before


def test_replayed_tool_only_turn_beyond_the_window_is_not_counted_again(new_session, feed,
                                                                        counters):
    from app.transcript.accumulator import REPLAY_WINDOW

    sid = new_session("ordinary")
    tool_turn = [cl.assistant(cl.tool_use("t"), uuid="w-a"), cl.result(uuid="w-r")]
    feed(sid, tool_turn)
    feed(sid, [cl.assistant(cl.text(f"n{i}")) for i in range(REPLAY_WINDOW)] + [cl.result()])
    feed(sid, tool_turn)  # its ids left the window: only the turn_key recognises it
    assert counters(sid) == (2, 1, 1)


def test_tool_only_ordinary_turn_is_a_turn_without_a_visible_message(new_session, feed,
                                                                     counters):
    sid = new_session("ordinary")
    feed(sid, [cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()])
    assert counters(sid) == (1, 0, 0)


@BOTH_KINDS
def test_two_identical_turns_count_twice(kind, new_session, feed, counters):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("same")), cl.result(),
               cl.assistant(cl.text("same")), cl.result()])
    assert counters(sid) == (2, 2, 2)


def test_a_session_starts_at_zero(new_session, counters):
    assert counters(new_session("ordinary")) == (0, 0, 0)


def test_two_identical_codex_runs_are_two_turns_and_a_resent_turn_end_counts_nothing(app, feed,
                                                                                      rows):
    sid = sessions.open_session({"session_type": "agent", "provider": "codex"},
                                writing()).session_id
    run = ['{"type": "turn.started"}',
           '{"type": "item.completed", "item": {"id": "item_0", "type": "agent_message",'
           ' "text": "Done."}}',
           '{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}']
    first = [run[0], run[1].replace("Done.", "Looking."), run[2]]
    feed(sid, first)
    feed(sid, run)
    feed(sid, run)  # the same lines, but not a copy of the stream from its start
    feed(sid, [run[-1]])  # a re-sent turn end closes an empty turn
    assert [r[0] for r in rows("SELECT content FROM session_messages WHERE session_id = ?"
                               " ORDER BY id", sid)] == ["Looking.", "Done.", "Done."]
    assert rows("SELECT conversation_turn_count, message_count FROM agent_sessions"
                " WHERE session_id = ?", sid) == [(3, 3)]
    feed(sid, first + run + run)  # the whole stream again, under new seqs
    assert rows("SELECT conversation_turn_count, message_count FROM agent_sessions"
                " WHERE session_id = ?", sid) == [(3, 3)]


def test_the_repository_counts_each_new_key_once_in_one_statement(app, new_session, rows):
    sid = new_session()
    with writing() as uow:
        assert sorted(uow.turns.add_many_if_new(sid, ["turn:a", "turn:b", "turn:b"], "t")) == [
            "turn:a", "turn:b"]
        assert uow.turns.add_many_if_new(sid, ["turn:b", "turn:c"], "t") == ["turn:c"]
        assert uow.turns.add_many_if_new(sid, [], "t") == []
        assert uow.turns.known(sid, ["turn:c", "turn:d"]) == {"turn:c"}
        assert uow.turns.known("another-session", ["turn:a"]) == set()
        uow.commit()
    assert rows("SELECT turn_key FROM session_turns WHERE session_id = ? ORDER BY turn_key",
                sid) == [("turn:a",), ("turn:b",), ("turn:c",)]
