"""TranscriptTurn on its own: a raw Turn in, one normalized shape out."""
import pytest

from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.transcript_turn import normalized_blocks
from app.transcript.turns import ITEM_STATE
from app.transcript.turns import Turn

USE = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "a\n", "is_error": False}


def text(value, delta=None):
    block = {"type": "text", "text": value}
    if delta is not None:
        block["delta"] = delta
    return block


def item_state(item_id, *blocks):
    return {"type": ITEM_STATE, "item_id": item_id, "blocks": list(blocks)}


def raw(*parts, trigger="result", result=None, **extra):
    return Turn("turn:k", parts, ("m1",), trigger, result or {}, 4, 9, **extra)


def test_a_turn_keeps_its_identity_times_and_range():
    turn = TranscriptTurn.from_turn(raw(text("hi"), started_at="2026-01-01T00:00:00.000000Z",
                                        completed_at="2026-01-01T00:00:05.000000Z"))
    assert (turn.turn_id, turn.role) == ("turn:k", "assistant")
    assert (turn.started_at, turn.completed_at) == ("2026-01-01T00:00:00.000000Z",
                                                    "2026-01-01T00:00:05.000000Z")
    assert turn.event_range == [4, 9] and turn.message_ids == ["m1"]


def test_text_blocks_stay_in_place_among_the_others_and_make_the_visible_text():
    turn = TranscriptTurn.from_turn(raw(text("one"), USE, RESULT, text("two")))
    assert turn.content_blocks == [text("one"), USE, RESULT, text("two")]
    assert turn.visible_text == "one\n\ntwo" and turn.has_visible_text


def test_a_run_of_deltas_is_one_text_block_without_the_flag():
    blocks = normalized_blocks([text("Let ", True), text("me.", True), USE, text("A", True),
                                text("B", True), text("C"), text("D", True)])
    assert blocks == [text("Let me."), USE, text("AB"), text("C"), text("D")]


def test_an_item_state_is_expanded_into_its_blocks_where_it_stands():
    turn = TranscriptTurn.from_turn(raw(item_state("item_0", USE, RESULT), text("done"),
                                        item_state("item_1")))
    assert turn.content_blocks == [USE, RESULT, text("done")]


def test_tool_call_ids_and_evidence_ids_name_each_id_once_in_order():
    second = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    answer = {"type": "tool_result", "tool_use_id": "srv_1", "content": "", "is_error": False}
    no_id = {"type": "tool_use", "id": None, "name": "x", "input": {}}
    turn = TranscriptTurn.from_turn(raw(USE, second, no_id, answer, RESULT, dict(RESULT)))
    assert turn.tool_call_ids == ["t1", "srv_1"]
    assert turn.evidence_ids == ["srv_1", "t1"]


def test_a_turn_without_tools_has_no_ids():
    turn = TranscriptTurn.from_turn(raw(text("just talk")))
    assert (turn.tool_call_ids, turn.evidence_ids) == ([], [])


@pytest.mark.parametrize("result, trigger, expected", [
    ({"subtype": "success", "is_error": False}, "result", "success"),
    ({"subtype": "success", "is_error": True}, "result", "error"),
    ({"subtype": "error_max_turns", "is_error": True}, "result", "max_turns"),
    ({"subtype": "success", "terminal_reason": "aborted_streaming"}, "result", "interrupted"),
    ({}, "completion", "process_exit"),
])
def test_terminal_reason(result, trigger, expected):
    assert TranscriptTurn.from_turn(raw(text("x"), trigger=trigger,
                                        result=result)).terminal_reason == expected


def test_an_empty_turn_is_empty_unless_it_failed():
    assert TranscriptTurn.from_turn(raw()).is_empty
    assert TranscriptTurn.from_turn(raw(item_state("item_0"))).is_empty
    assert not TranscriptTurn.from_turn(raw(result={"is_error": True})).is_empty
    assert not TranscriptTurn.from_turn(raw(text(" "))).is_empty


def test_usage_is_summed_over_messages():
    usage = {"m1": {"input_tokens": 2, "output_tokens": 1}, "m2": {"output_tokens": 4}}
    assert TranscriptTurn.from_turn(raw(text("x"), usage=usage)).usage == {
        "input_tokens": 2, "output_tokens": 5}


def test_a_turn_with_parts_still_saved_elsewhere_is_refused():
    with pytest.raises(ValueError):
        TranscriptTurn.from_turn(raw(text("tail"), saved_parts=2))


def test_normalizing_leaves_the_raw_turn_alone():
    parts = (text("a", True), text("b", True))
    TranscriptTurn.from_turn(raw(*parts))
    assert parts == (text("a", True), text("b", True))

