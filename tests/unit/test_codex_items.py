"""Codex items restated by item.started / item.updated / item.completed: one block per
item id within a turn, where the item first appeared, holding its last state."""
import pytest

from app.core.records import Chunk
from app.providers.codex import parse_line as parse_codex
from app.services import ingest
from app.transcript.accumulator import Accumulator
from app.transcript.transcript_turn import TranscriptTurn
from tests import codex_lines as cx
from tests.fakes import FakeUnitOfWork


def feed_codex(acc, lines, start=0, received_at=None):
    out = []
    for index, line in enumerate(lines, start):
        out.extend(acc.feed(parse_codex(line), index, received_at))
    return out


def test_an_item_restated_within_a_request_keeps_its_first_place_and_last_state():
    acc = Accumulator()
    [turn] = feed_codex(acc, [
        cx.turn_started(),
        cx.todo_list("started", "item_0", False, False),
        cx.command("started", "item_1", "pytest"),
        cx.todo_list("updated", "item_0", True, False),
        cx.command("completed", "item_1", "pytest", "1 passed", 0, "completed"),
        cx.todo_list("completed", "item_0", True, True),
        cx.message("item_2", "All green."),
        cx.turn_completed(),
    ])
    blocks = TranscriptTurn.from_turn(turn).content_blocks
    assert [(b["type"], b.get("name")) for b in blocks] == [
        ("tool_use", "todo_list"), ("tool_use", "command_execution"), ("tool_result", None),
        ("text", None)]
    assert [entry["completed"] for entry in blocks[0]["input"]["items"]] == [True, True]
    assert blocks[2]["content"] == "1 passed"
    assert (turn.first_event_index, turn.last_event_index) == (1, 7)


def test_an_item_restated_after_its_place_was_saved_is_handed_back_to_rewrite():
    acc = Accumulator()
    feed_codex(acc, [cx.turn_started(), cx.command("started", "item_0", "make"),
                     cx.message("item_1", "Building.")])
    assert [p["item_id"] for p in acc.take_unsaved_parts().parts] == ["item_0", "item_1"]
    revived = Accumulator.restore(acc.snapshot())
    feed_codex(revived, [cx.command("updated", "item_0", "make", "cc a.c"),
                         cx.command("completed", "item_0", "make", "cc a.c\nok", 0, "completed"),
                         cx.message("item_2", "Built.")], start=3)
    start, parts, restated = revived.take_unsaved_parts()
    assert start == 2 and [p["item_id"] for p in parts] == ["item_2"]
    assert list(restated) == [0]
    assert restated[0]["blocks"][1]["content"] == "cc a.c\nok"


def test_a_turn_closed_before_its_restated_parts_were_saved_carries_them():
    acc = Accumulator()
    feed_codex(acc, [cx.turn_started(), cx.command("started", "item_0", "make")])
    saved = acc.take_unsaved_parts().parts
    revived = Accumulator.restore(acc.snapshot())
    [turn] = feed_codex(revived, [
        cx.command("completed", "item_0", "make", "done", 0, "completed"), cx.turn_completed()],
        start=2)
    whole = TranscriptTurn.from_turn(turn.with_saved_parts(saved))
    assert [b["type"] for b in whole.content_blocks] == ["tool_use", "tool_result"]
    assert whole.content_blocks[1]["content"] == "done"
    assert revived.take_unsaved_parts() == (0, [], {})


def test_snapshot_refuses_to_drop_restated_parts():
    acc = Accumulator()
    feed_codex(acc, [cx.command("started", "item_0", "make")])
    acc.take_unsaved_parts()
    feed_codex(acc, [cx.command("updated", "item_0", "make", "x")], start=1)
    with pytest.raises(RuntimeError):
        acc.snapshot()


def test_turn_started_makes_item_ids_name_new_items():
    # a run killed mid-turn leaves its turn open; the next run restarts at item_0
    acc = Accumulator()
    [turn] = feed_codex(acc, [cx.turn_started(), cx.command("started", "item_0", "sleep 100"),
                              cx.turn_started(), cx.message("item_0", "Resumed."),
                              cx.turn_completed()])
    blocks = TranscriptTurn.from_turn(turn).content_blocks
    assert blocks == [
        {"type": "tool_use", "id": "item_0", "name": "command_execution",
         "input": {"command": "sleep 100"}},
        {"type": "text", "text": "Resumed."},
    ]


def test_item_ids_are_forgotten_when_the_turn_closes():
    acc = Accumulator()
    feed_codex(acc, [cx.turn_started(), cx.message("item_0", "First run."), cx.turn_completed()])
    [second] = feed_codex(acc, [cx.message("item_0", "Second run."), cx.turn_completed()],
                          start=3)
    assert TranscriptTurn.from_turn(second).visible_text == "Second run."


def test_a_codex_turn_starts_with_turn_started_and_a_note_does_not_start_one():
    acc = Accumulator()
    feed_codex(acc, [cx.thread_started()], received_at="T0")
    feed_codex(acc, [cx.turn_started()], start=1, received_at="T1")
    [turn] = feed_codex(acc, [cx.message("item_0", "hi"), cx.turn_completed()], start=2,
                        received_at="T2")
    assert (turn.started_at, turn.completed_at) == ("T1", "T2")
    assert turn.first_event_index == 2


@pytest.fixture
def uow():
    uow = FakeUnitOfWork()
    uow.sessions.add("cx", None, "workflow", {"workflow_id": "wf-1"}, "codex", "t0")
    return uow


def send(uow, lines, start=0):
    chunks = [Chunk(line, "stdout", start + i) for i, line in enumerate(lines)]
    return ingest.ingest_output("cx", chunks, uow, retention_seconds=60)


def test_an_item_restated_in_later_requests_is_one_block_in_its_first_place(uow):
    send(uow, [cx.turn_started(), cx.todo_list("started", "item_0", False, False)])
    send(uow, [cx.command("started", "item_1", "make"),
               cx.todo_list("updated", "item_0", True, False)], start=2)
    assert [p["item_id"] for p in uow.turn_states.parts["cx"]] == ["item_0", "item_1"]
    assert uow.turn_states.parts["cx"][0]["blocks"][0]["input"]["items"][0]["completed"] is True
    send(uow, [cx.command("completed", "item_1", "make", "ok", 0, "completed"),
               cx.todo_list("completed", "item_0", True, True), cx.message("item_2", "Built."),
               cx.turn_completed()], start=4)
    [row] = uow.messages.rows
    assert row.content == "Built."
    assert [(b["type"], b.get("name")) for b in row.content_blocks] == [
        ("tool_use", "todo_list"), ("tool_use", "command_execution"), ("tool_result", None),
        ("text", None)]
    assert row.content_blocks[0]["input"]["items"] == [{"text": "step 1", "completed": True},
                                                       {"text": "step 2", "completed": True}]
    assert row.content_blocks[2]["content"] == "ok"
    assert "cx" not in uow.turn_states.parts
