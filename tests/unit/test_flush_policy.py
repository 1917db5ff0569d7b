"""The flush policy on its own: which turns become which rows, per session kind."""
import pytest

from app.transcript.accumulator import SystemNote
from app.transcript.accumulator import Turn
from app.transcript.flush_policy import AUTONOMOUS
from app.transcript.flush_policy import ORDINARY
from app.transcript.flush_policy import is_autonomous
from app.transcript.flush_policy import policy_for
from app.transcript.transcript_turn import TranscriptTurn

TOOL_USE = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}
THINKING = {"type": "thinking", "thinking": "hm", "signature": "s"}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": False}


def text(value):
    return {"type": "text", "text": value}


def turn(texts=(), blocks=(), result=None):
    parts = tuple(text(t) for t in texts) + tuple(blocks)
    return closed(Turn("turn:k", parts, ("m1",), "result", result or {}, 0, 3))


def closed(raw):
    """The policy reads normalized turns."""
    return TranscriptTurn.from_turn(raw)


@pytest.mark.parametrize("session_type, context, expected", [
    ("workflow", {"workflow_id": "wf-1"}, AUTONOMOUS),
    ("workflow", {}, ORDINARY),
    ("workflow", {"workflow_id": ""}, ORDINARY),
    ("workflow", None, ORDINARY),
    ("agent", {"workflow_id": "wf-1"}, ORDINARY),
    ("chat", {}, ORDINARY),
    ("terminal", {}, ORDINARY),
])
def test_policy_is_derived_from_type_and_workflow_id(session_type, context, expected):
    assert policy_for(session_type, context) is expected
    assert is_autonomous(session_type, context) is (expected is AUTONOMOUS)


@pytest.mark.parametrize("policy", [ORDINARY, AUTONOMOUS])
def test_text_turn_is_one_assistant_row_with_its_blocks(policy):
    draft = policy.draft(turn(["Hello"], [THINKING, TOOL_USE]))
    assert (draft.role, draft.content, draft.source) == ("assistant", "Hello", "remote_live")
    assert draft.content_blocks == [text("Hello"), THINKING, TOOL_USE]
    assert draft.metadata["content_blocks"] == [text("Hello"), THINKING, TOOL_USE]
    assert draft.turn_key == "turn:k"


@pytest.mark.parametrize("blocks", [[TOOL_USE], [THINKING], [TOOL_USE, TOOL_RESULT]])
def test_block_only_turn_is_dropped_when_ordinary(blocks):
    assert ORDINARY.draft(turn([], blocks)) is None


@pytest.mark.parametrize("blocks", [[TOOL_USE], [THINKING], [TOOL_USE, TOOL_RESULT]])
def test_block_only_turn_is_evidence_when_autonomous(blocks):
    draft = AUTONOMOUS.draft(turn([], blocks))
    assert draft.role == "assistant" and draft.content == ""
    assert draft.content_blocks == blocks


def test_tool_results_are_ignored_when_ordinary_and_folded_when_autonomous():
    blocks = [TOOL_USE, TOOL_RESULT]
    assert ORDINARY.draft(turn(["t"], blocks)).content_blocks == [text("t"), TOOL_USE]
    assert AUTONOMOUS.draft(turn(["t"], blocks)).content_blocks == [text("t"), TOOL_USE,
                                                                    TOOL_RESULT]


def test_the_row_keeps_every_block_in_arrival_order():
    parts = (text("Looking."), TOOL_USE, TOOL_RESULT, text("Found it."))
    draft = AUTONOMOUS.draft(closed(Turn("turn:k", parts, (), "result", {}, 0, 3)))
    assert draft.content == "Looking.\n\nFound it."
    assert draft.content_blocks == list(parts)
    assert ORDINARY.draft(closed(Turn("turn:k", parts, (), "result", {}, 0, 3))).content_blocks \
        == [text("Looking."), TOOL_USE, text("Found it.")]


@pytest.mark.parametrize("policy", [ORDINARY, AUTONOMOUS])
def test_an_empty_turn_writes_nothing(policy):
    assert policy.draft(turn([], [])) is None


@pytest.mark.parametrize("texts", [["  \n"], ["\n", "\n"], [" ", "\t"]])
def test_whitespace_is_not_visible_text(texts):
    assert ORDINARY.draft(turn(texts, [TOOL_USE])) is None
    draft = AUTONOMOUS.draft(turn(texts, [TOOL_USE]))
    assert draft.role == "assistant"
    assert draft.content == ""
    assert draft.content_blocks == [*map(text, texts), TOOL_USE]


@pytest.mark.parametrize("policy", [ORDINARY, AUTONOMOUS])
def test_whitespace_only_text_without_blocks_writes_nothing(policy):
    assert policy.draft(turn(["\n\n"], [])) is None


@pytest.mark.parametrize("policy", [ORDINARY, AUTONOMOUS])
def test_failed_turn_without_text_leaves_a_system_note(policy):
    draft = policy.draft(turn([], [], {"subtype": "error_max_turns", "is_error": True,
                                       "result": "limit reached"}))
    assert draft.role == "system"
    assert draft.content == "Turn failed (error_max_turns): limit reached"
    assert draft.metadata["result"] == {"subtype": "error_max_turns", "is_error": True}


def test_result_fields_go_to_metadata_without_the_duplicated_text():
    draft = ORDINARY.draft(turn(["Done."], [], {"subtype": "success", "result": "Done."}))
    assert draft.metadata["result"] == {"subtype": "success"}
    assert draft.metadata["trigger"] == "result"


def test_system_notes_with_text_become_system_rows_and_empty_ones_vanish():
    draft = ORDINARY.draft(SystemNote("system:s1", "Session started", "init"))
    assert (draft.role, draft.content, draft.turn_key) == ("system", "Session started", "system:s1")
    assert draft.metadata == {"subtype": "init"}
    assert ORDINARY.draft(SystemNote("system:s2", "  ", "hook_started")) is None


@pytest.mark.parametrize("result, trigger, expected", [
    ({"subtype": "success", "is_error": False}, "result", "success"),
    ({"subtype": "success", "is_error": True}, "result", "error"),
    ({"subtype": "error_max_turns", "is_error": True}, "result", "max_turns"),
    ({"subtype": "error_during_execution", "is_error": True}, "result", "error"),
    ({"subtype": "success", "terminal_reason": "aborted_tools"}, "result", "interrupted"),
    ({}, "completion", "process_exit"),
])
def test_rows_carry_the_turn_id_and_why_the_turn_ended(result, trigger, expected):
    parts = ({"type": "text", "text": "hi"},)
    draft = ORDINARY.draft(closed(Turn("turn:k", parts, (), trigger, result, 0, 1)))
    assert draft.metadata["turn_id"] == "turn:k"
    assert draft.metadata["terminal_reason"] == expected


def test_turn_usage_goes_to_metadata_summed_over_messages():
    parts = ({"type": "text", "text": "hi"},)
    usage = {"m1": {"input_tokens": 3, "output_tokens": 7}, "m2": {"output_tokens": 1}}
    draft = ORDINARY.draft(closed(Turn("turn:k", parts, ("m1", "m2"), "result", {}, 0, 1,
                                       usage=usage)))
    assert draft.metadata["usage"] == {"input_tokens": 3, "output_tokens": 8}
    no_usage = closed(Turn("turn:k", parts, (), "result", {}, 0, 1))
    assert "usage" not in ORDINARY.draft(no_usage).metadata


@pytest.mark.parametrize("policy", [ORDINARY, AUTONOMOUS])
def test_rows_and_failure_notes_say_when_the_turn_started_and_completed(policy):
    times = {"started_at": "2026-03-01T12:00:01.000000Z",
             "completed_at": "2026-03-01T12:00:09.000000Z"}
    parts = ({"type": "text", "text": "hi"},)
    row = policy.draft(closed(Turn("turn:k", parts, (), "result", {}, 0, 1, **times)))
    note = policy.draft(closed(Turn("turn:f", (), (), "result", {"is_error": True}, 2, 2,
                                    **times)))
    for draft in (row, note):
        assert {k: draft.metadata[k] for k in times} == times
    assert note.role == "system" and note.metadata["turn_id"] == "turn:f"


def test_the_row_holds_the_blocks_of_the_normalized_turn():
    item = {"type": "item_state", "item_id": "item_0", "blocks": [TOOL_USE, TOOL_RESULT]}
    parts = ({"type": "text", "text": "Lo", "delta": True}, {"type": "text", "text": "ok",
                                                             "delta": True}, item)
    draft = AUTONOMOUS.draft(closed(Turn("turn:k", parts, (), "result", {}, 0, 3)))
    assert draft.content == "Look"
    assert draft.content_blocks == [text("Look"), TOOL_USE, TOOL_RESULT]
