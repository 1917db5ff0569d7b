"""The accumulator on its own: events in, turns out, no database."""
import json
from pathlib import Path

import pytest

from app.providers import get_parser
from app.providers.claude import parse_line
from app.transcript.accumulator import COMPLETION_TRIGGER
from app.transcript.accumulator import LINE_KEY_CHARS
from app.transcript.accumulator import REPLAY_WINDOW
from app.transcript.accumulator import RESULT_TRIGGER
from app.transcript.accumulator import Accumulator
from app.transcript.accumulator import line_key
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import TURN_STARTED
from app.transcript.event_types import StreamEvent
from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.turns import DONE_ITEMS
from app.transcript.turns import SystemNote
from app.transcript.turns import Turn
from tests import claude_lines as cl


def texts(turn):
    """The paragraphs of a whole turn, as the transcript will show them."""
    return tuple(b["text"] for b in TranscriptTurn.from_turn(turn).content_blocks
                 if b["type"] == "text")


def text(turn):
    return TranscriptTurn.from_turn(turn).visible_text


def feed_all(acc, lines, start=0):
    out = []
    for index, line in enumerate(lines, start):
        out.extend(acc.feed(parse_line(line), index))
    return out


def test_result_closes_a_turn_with_text_and_blocks_in_order():
    acc = Accumulator()
    out = feed_all(acc, [
        cl.assistant(cl.thinking(), message_id="m1"),
        cl.assistant(cl.text("one"), message_id="m1"),
        cl.assistant(cl.tool_use("t1"), message_id="m1"),
        cl.tool_result("t1"),
        cl.assistant(cl.text("two"), message_id="m2"),
        cl.result(),
    ])
    [turn] = out
    assert isinstance(turn, Turn) and turn.trigger == RESULT_TRIGGER
    assert text(turn) == "one\n\ntwo"
    assert [b["type"] for b in turn.parts] == ["thinking", "text", "tool_use", "tool_result",
                                               "text"]
    assert turn.message_ids == ("m1", "m2")
    assert (turn.first_event_index, turn.last_event_index) == (0, 5)
    assert acc.buffer.is_empty()


def test_close_after_result_has_nothing_to_flush():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("hi")), cl.result()])
    assert acc.close() is None


def test_close_flushes_an_open_turn():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("unfinished"))])
    turn = acc.close()
    assert turn.trigger == COMPLETION_TRIGGER and text(turn) == "unfinished"


def test_same_line_twice_in_a_turn_counts_once():
    acc = Accumulator()
    line = cl.assistant(cl.text("once"), uuid="a-dup")
    feed_all(acc, [line, line])
    assert texts(acc.close()) == ("once",)


def test_turn_key_is_stable_for_the_same_lines_and_differs_for_new_ones():
    lines = [cl.assistant(cl.text("same"), uuid="a-1"), cl.result(uuid="r-1")]
    first = feed_all(Accumulator(), lines)[0]
    again = feed_all(Accumulator(), lines, start=100)[0]
    other = feed_all(Accumulator(), [cl.assistant(cl.text("same")), cl.result()])[0]
    assert first.key == again.key
    assert first.key != other.key and text(first) == text(other)


def test_lines_without_ids_are_keyed_by_position():
    acc = Accumulator()
    feed_all(acc, [cl.openai_message("same")], start=0)
    first = acc.close()
    feed_all(acc, [cl.openai_message("same")], start=1)
    second = acc.close()
    assert text(first) == text(second)
    assert first.key != second.key


def test_system_lines_become_notes_without_touching_the_turn():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("open"))])
    [note] = feed_all(acc, [cl.system_init(uuid="s-1")], start=1)
    assert isinstance(note, SystemNote) and note.key == "system:s-1"
    assert acc.buffer.parts == [{"type": "text", "text": "open"}]


def test_junk_lines_leave_the_turn_alone():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a")), "garbage {", '{"type":"nope"}',
                   cl.assistant(cl.text("b"))])
    assert texts(acc.close()) == ("a", "b")


def test_snapshot_and_saved_parts_carry_the_open_turn_across_a_restart():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("before restart"), message_id="m9")])
    start, parts, restated = acc.take_unsaved_parts()
    assert (start, parts, restated) == (0, [{"type": "text", "text": "before restart"}], {})
    revived = Accumulator.restore(acc.snapshot())
    feed_all(revived, [cl.assistant(cl.text("after"), message_id="m9")], start=1)
    turn = revived.close()
    assert turn.saved_parts == 1 and turn.parts == ({"type": "text", "text": "after"},)
    whole = turn.with_saved_parts(parts)
    assert texts(whole) == ("before restart", "after") and whole.message_ids == ("m9",)
    assert Accumulator.restore(None).buffer.is_empty()


def test_the_turn_key_does_not_depend_on_where_the_snapshots_fell():
    lines = [cl.assistant(cl.text(str(n)), uuid=f"a-{n}") for n in range(5)] + [cl.result(uuid="r")]
    whole = feed_all(Accumulator(), lines)[0]
    acc = Accumulator()
    feed_all(acc, lines[:2])
    acc.take_unsaved_parts()
    acc = Accumulator.restore(acc.snapshot())
    split = feed_all(acc, lines[2:], start=2)[0]
    assert split.key == whole.key


def test_snapshot_refuses_to_drop_unsaved_parts():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("unsaved"))])
    with pytest.raises(RuntimeError):
        acc.snapshot()


def test_saved_parts_must_all_come_back():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a")), cl.assistant(cl.text("b"))])
    acc.take_unsaved_parts()
    with pytest.raises(ValueError):
        acc.close().with_saved_parts([{"type": "text", "text": "a"}])


def test_a_line_seen_in_an_earlier_turn_is_skipped():
    acc = Accumulator()
    tail = cl.assistant(cl.text("tail"), uuid="a-tail")
    feed_all(acc, [cl.assistant(cl.text("head")), tail, cl.result()])
    feed_all(acc, [tail, cl.assistant(cl.text("next"))], start=3)
    assert texts(acc.close()) == ("next",)


def test_the_replay_window_is_bounded_and_survives_a_snapshot():
    acc = Accumulator()
    lines = [cl.assistant(cl.text(str(n)), uuid=f"a-{n}") for n in range(REPLAY_WINDOW + 1)]
    feed_all(acc, lines)
    acc.take_unsaved_parts()
    revived = Accumulator.restore(acc.snapshot())
    assert len(revived.snapshot()["recent_ids"]) == REPLAY_WINDOW * LINE_KEY_CHARS
    feed_all(revived, [lines[0], lines[-1]], start=REPLAY_WINDOW + 1)
    # a-0 fell out of the window and is read again; the newest id is still remembered
    assert revived.close().parts == ({"type": "text", "text": "0"},)


def test_the_window_stores_fixed_width_digests_and_reads_a_header_of_whole_ids():
    long_id = "item_" + "x" * 500  # some providers' ids are long; the window's cost is not
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a"), uuid="a-1"), cl.assistant(cl.text("b"), uuid=long_id)])
    acc.take_unsaved_parts()
    snapshot = acc.snapshot()
    assert snapshot["recent_ids"] == line_key("a-1") + line_key(long_id)
    assert len(snapshot["recent_ids"]) == 2 * LINE_KEY_CHARS
    # a header saved before the digests held the ids themselves: it still spots re-sends
    old = Accumulator.restore({**snapshot, "recent_ids": ["a-1", long_id]})
    assert old.is_repeat(parse_line(cl.assistant(cl.text("a"), uuid="a-1")))
    assert not old.is_repeat(parse_line(cl.assistant(cl.text("c"), uuid="a-3")))
    assert old.snapshot()["recent_ids"] == snapshot["recent_ids"]


def test_usage_counts_once_per_message_id_however_many_lines_repeat_it():
    acc = Accumulator()
    [turn] = feed_all(acc, [
        cl.assistant(cl.thinking(), message_id="m1"),   # every line repeats m1's usage
        cl.assistant(cl.text("a"), message_id="m1"),
        cl.assistant(cl.tool_use("t1"), message_id="m1"),
        cl.tool_result("t1"),
        cl.assistant(cl.text("b"), message_id="m2"),
        cl.result(usage=None),  # no total of its own: the fold stands in
    ])
    assert turn.usage == {"m1": {"input_tokens": 3, "output_tokens": 7},
                          "m2": {"input_tokens": 3, "output_tokens": 7}}
    assert TranscriptTurn.from_turn(turn).usage == {"input_tokens": 6, "output_tokens": 14}


def test_the_results_own_usage_is_the_turns_usage():
    reported = {"input_tokens": 18, "output_tokens": 99, "cache_read_input_tokens": 8800,
                "cache_creation_input_tokens": 800}
    [turn] = feed_all(Accumulator(), [
        cl.assistant(cl.text("a"), message_id="m1"),
        cl.assistant(cl.text("b"), message_id="m2"),
        cl.result(usage={**reported, "server_tool_use": {"web_search_requests": 0}}),
    ])
    assert TranscriptTurn.from_turn(turn).usage == reported


@pytest.mark.parametrize("delta_first", [True, False])
def test_a_message_deltas_usage_overrides_the_snapshot_its_lines_repeat(delta_first):
    start = cl.message_start("m1", {"input_tokens": 12, "output_tokens": 18})
    delta = cl.message_delta({"output_tokens": 99})
    lines = [cl.assistant(cl.text("a"), message_id="m1"), cl.assistant(cl.text("b"), message_id="m1")]
    lines = [start, delta, *lines] if delta_first else [start, *lines, delta]
    acc = Accumulator()
    feed_all(acc, lines)
    feed_all(acc, [delta], start=10)  # a re-sent copy: the same cumulative counts
    [turn] = feed_all(acc, [cl.result(usage=None)], start=11)
    # input_tokens from the lines' snapshot, output_tokens from the final delta
    assert TranscriptTurn.from_turn(turn).usage == {"input_tokens": 3, "output_tokens": 99}


def test_the_streaming_message_survives_a_snapshot():
    acc = Accumulator()
    feed_all(acc, [cl.message_start("m1"), cl.assistant(cl.text("a"), message_id="m1")])
    saved = acc.take_unsaved_parts().parts
    revived = Accumulator.restore(acc.snapshot())
    [turn] = feed_all(revived, [cl.message_delta({"output_tokens": 40}), cl.result(usage=None)], start=2)
    assert TranscriptTurn.from_turn(turn.with_saved_parts(saved)).usage["output_tokens"] == 40


def test_usage_survives_a_snapshot():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a"), message_id="m1")])
    saved = acc.take_unsaved_parts().parts
    revived = Accumulator.restore(acc.snapshot())
    [turn] = feed_all(revived, [cl.assistant(cl.text("b"), message_id="m1"), cl.result()], start=1)
    whole = TranscriptTurn.from_turn(turn.with_saved_parts(saved))
    assert whole.usage == {"input_tokens": 3, "output_tokens": 7}


def item_event(item_id, *blocks):
    return StreamEvent(ASSISTANT, blocks, item_id=item_id)


def test_an_item_restated_keeps_its_first_place_and_takes_its_last_state():
    acc = Accumulator()
    acc.feed(item_event("i1", cl.text("draft")), 0)
    acc.feed(StreamEvent(ASSISTANT, (cl.text("between"),)), 1)
    acc.feed(item_event("i1", cl.text("final")), 2)
    turn = acc.close()
    assert [p["type"] for p in turn.parts] == ["item_state", "text"]
    assert TranscriptTurn.from_turn(turn).visible_text == "final\n\nbetween"
    assert (turn.first_event_index, turn.last_event_index) == (0, 2)


def test_an_item_whose_place_is_saved_comes_back_as_a_restated_part():
    acc = Accumulator()
    acc.feed(item_event("i1", cl.text("draft")), 0)
    saved = acc.take_unsaved_parts().parts
    acc.feed(item_event("i1", cl.text("better")), 1)
    acc.feed(item_event("i1", cl.text("final")), 2)
    unsaved = acc.take_unsaved_parts()
    assert (unsaved.start, unsaved.parts) == (1, [])
    assert unsaved.restated == {0: {"type": "item_state", "item_id": "i1",
                                    "blocks": [cl.text("final")]}}
    restated = [unsaved.restated[0]]
    assert TranscriptTurn.from_turn(acc.close().with_saved_parts(restated)).visible_text == "final"
    assert saved[0]["blocks"] == [cl.text("draft")]


def test_a_turn_that_closes_before_its_restated_parts_are_saved_carries_them():
    acc = Accumulator()
    acc.feed(item_event("i1", cl.text("draft")), 0)
    saved = acc.take_unsaved_parts().parts
    acc.feed(item_event("i1", cl.text("final")), 1)
    turn = acc.close()
    assert TranscriptTurn.from_turn(turn.with_saved_parts(saved)).visible_text == "final"
    assert acc.take_unsaved_parts() == (0, [], {})


def test_an_item_is_forgotten_once_done_so_the_header_holds_only_open_items():
    acc = Accumulator()
    for n in range(50):
        acc.feed(StreamEvent(ASSISTANT, (cl.text(f"{n}"),), item_id=f"i{n}", item_done=True), n)
    acc.feed(item_event("open", cl.text("running")), 50)
    again = item_event("i0", cl.text("again"))
    assert acc.is_repeat(again)  # a state of a finished item: a re-sent copy
    acc.feed(again, 51)
    unsaved = acc.take_unsaved_parts()
    assert len(unsaved.parts) == 51 and unsaved.parts[0]["blocks"] == [cl.text("0")]
    assert acc.snapshot()["turn"]["items"] == {"open": 50}
    acc.feed(StreamEvent(ASSISTANT, (cl.text("finished"),), item_id="open", item_done=True), 52)
    assert acc.take_unsaved_parts().restated[50]["blocks"] == [cl.text("finished")]
    assert acc.snapshot()["turn"]["items"] == {}
    assert len(acc.snapshot()["turn"]["done_items"]) == min(51, DONE_ITEMS)


def test_a_new_turn_scope_makes_an_item_id_name_a_new_item():
    acc = Accumulator()
    acc.feed(item_event("i1", cl.text("old run")), 0)
    acc.feed(StreamEvent(TURN_STARTED), 1)
    acc.feed(item_event("i1", cl.text("new run")), 2)
    assert TranscriptTurn.from_turn(acc.close()).visible_text == "old run\n\nnew run"


# Times: the caller says when each line arrived; the turn keeps its first and its last.

def test_a_turn_starts_with_its_first_line_and_completes_with_its_trigger():
    acc = Accumulator()
    feed_all_at(acc, [cl.assistant(cl.text("a"))], "T1")
    feed_all_at(acc, [cl.assistant(cl.text("b"))], "T2", start=1)
    [turn] = feed_all_at(acc, [cl.result()], "T3", start=2)
    assert (turn.started_at, turn.completed_at) == ("T1", "T3")


def test_a_turn_closed_by_completion_completes_then():
    acc = Accumulator()
    feed_all_at(acc, [cl.assistant(cl.text("a"))], "T1")
    turn = acc.close(completed_at="T9")
    assert (turn.started_at, turn.completed_at, turn.trigger) == ("T1", "T9", COMPLETION_TRIGGER)


def test_the_start_time_survives_a_snapshot():
    acc = Accumulator()
    feed_all_at(acc, [cl.assistant(cl.text("a"))], "T1")
    acc.take_unsaved_parts()
    revived = Accumulator.restore(acc.snapshot())
    [turn] = feed_all_at(revived, [cl.result()], "T2", start=1)
    assert (turn.started_at, turn.completed_at) == ("T1", "T2")


def test_a_snapshot_from_before_turn_times_still_restores():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a"))])
    acc.take_unsaved_parts()
    old = acc.snapshot()
    for key in ("started_at", "items"):
        del old["turn"][key]
    revived = Accumulator.restore(old)
    [turn] = feed_all_at(revived, [cl.result()], "T2", start=1)
    # its start was never stamped: unknown, not the time of a later line
    assert (turn.started_at, turn.completed_at, turn.saved_parts) == (None, "T2", 1)


def feed_all_at(acc, lines, received_at, start=0):
    out = []
    for index, line in enumerate(lines, start):
        out.extend(acc.feed(parse_line(line), index, received_at))
    return out


def test_the_finished_items_remembered_are_bounded():
    acc = Accumulator()
    for n in range(DONE_ITEMS + 10):
        acc.feed(StreamEvent(ASSISTANT, (cl.text(f"{n}"),), item_id=f"i{n}", item_done=True), n)
    done = acc.buffer.done_items
    assert len(done) == DONE_ITEMS and done[-1] == f"i{DONE_ITEMS + 9}"
    assert not acc.is_repeat(item_event("i0", cl.text("0")))  # forgotten: a place of its own


def test_a_key_found_across_two_keys_of_the_window_is_no_match():
    acc = Accumulator()
    feed_all(acc, [cl.assistant(cl.text("a"), uuid="a-1"), cl.assistant(cl.text("b"), uuid="a-2")])
    acc.take_unsaved_parts()
    window = acc.snapshot()["recent_ids"]
    straddling = window[6:18]  # the second half of one key and the first half of the next
    assert len(straddling) == LINE_KEY_CHARS and straddling not in (line_key("a-1"), line_key("a-2"))
    # (no id digests to a chosen string, so the window's search is asked directly)
    assert line_key("a-2") in acc._recent and straddling not in acc._recent


STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


@pytest.mark.parametrize("path", sorted(STREAMS.glob("*/*.jsonl")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_feed_unless_repeat_says_what_is_repeat_then_feed_say(path):
    parse = get_parser(path.parent.name)
    lines = path.read_text().splitlines()
    # the stream, a runner retrying the last lines of each third, then all of it again
    sent = [line for at in range(len(lines)) for line in
            ([lines[at]] if at % 3 else lines[max(0, at - 2):at + 1])] + lines
    both, one = Accumulator(), Accumulator()
    for index, line in enumerate(sent):
        event = parse(line)
        expected = None if both.is_repeat(event, line) else both.feed(event, index, "t", line)
        assert one.feed_unless_repeat(event, index, "t", line) == expected
    for acc in (both, one):
        acc.take_unsaved_parts()
    assert one.snapshot() == both.snapshot()


def test_a_line_key_is_the_url_safe_base64_of_the_id_s_9_byte_blake2b_digest():
    # stored in every session's window: the same id must keep the same key across versions
    # ("a-9" digests to bytes whose standard base64 holds both "/" and "+")
    assert line_key("a-9") == "jeZd_sGrBL-i"
    assert len(line_key("")) == LINE_KEY_CHARS


def test_usage_changed_says_whether_the_line_changed_the_turns_usage():
    usage = {"input_tokens": 4, "output_tokens": 10}
    more = {"input_tokens": 4, "output_tokens": 30}

    def line(uuid, counts):
        return StreamEvent(ASSISTANT, ({"type": "text", "text": "hi"},), uuid, "msg_1",
                           info={"usage": counts})

    acc = Accumulator()
    changed = []
    for uuid, counts in (("u1", usage), ("u2", dict(usage)), ("u3", more), ("u4", usage)):
        acc.feed(line(uuid, counts), len(changed))
        changed.append(acc.usage_changed)
    # the first report, a repeat, a fuller report, an older (smaller) one
    assert changed == [True, False, True, False]
    assert acc.buffer.message_usage() == {"msg_1": more}


def costing(line, cost_usd, session_id="claude-session"):
    """A result line reporting its agent session's running cost, as Claude's do."""
    obj = json.loads(line)
    return json.dumps({**obj, "total_cost_usd": cost_usd, "session_id": session_id})


def test_a_claude_turn_costs_its_step_of_the_running_cost_across_stored_states():
    acc = Accumulator()
    [first] = feed_all(acc, [cl.assistant(cl.text("one")), costing(cl.result(), 0.00086)])
    later = Accumulator.restore(acc.snapshot())  # the next request
    [second] = feed_all(later, [cl.assistant(cl.text("two")), costing(cl.result(), 0.00199)], 2)
    assert first.result["cost_usd"] == pytest.approx(0.00086)
    assert second.result["cost_usd"] == pytest.approx(0.00113)
    assert second.result["total_cost_usd"] == 0.00199  # kept as Claude reported it
    assert "agent_session" not in second.result  # read, not kept with the turn


def test_a_resent_claude_result_costs_nothing():
    acc = Accumulator()
    result = costing(cl.result(), 0.25)
    feed_all(acc, [cl.assistant(cl.text("one")), result])
    # the same result beyond the replay window's reach: a line of its own, no new cost
    [again] = feed_all(acc, [cl.assistant(cl.text("one")), costing(cl.result(), 0.25)], 2)
    assert again.result["cost_usd"] == 0.0
