"""Codex items restated across requests: one stored part per item, rewritten in place."""
import json

import pytest

from app.db import writing
from app.services import sessions
from tests import codex_lines as cx

BOTH_KINDS = pytest.mark.parametrize("kind, session_type, context", [
    ("ordinary", "agent", {}),
    ("autonomous", "workflow", {"workflow_id": "wf-1"}),
])


@pytest.fixture
def codex_session(app):
    def create(session_type, context):
        data = {"session_type": session_type, "context": context, "provider": "codex"}
        return sessions.open_session(data, writing()).session_id
    return create


def stored_parts(rows, sid):
    found = rows("SELECT part_index, part FROM session_turn_parts WHERE session_id = ?"
                 " ORDER BY part_index", sid)
    return [(index, json.loads(part)) for index, part in found]


@BOTH_KINDS
def test_a_saved_item_is_rewritten_in_place_and_flushed_in_its_last_state(
        kind, session_type, context, codex_session, feed, rows, messages, counts):
    sid = codex_session(session_type, context)
    feed(sid, [cx.thread_started(), cx.turn_started(),
               cx.command("started", "item_0", "pytest -q")])
    feed(sid, [cx.message("item_1", "Running the tests."),
               cx.command("updated", "item_0", "pytest -q", "..")])

    parts = stored_parts(rows, sid)
    assert [(index, part["item_id"]) for index, part in parts] == [(0, "item_0"), (1, "item_1")]
    first = parts[0][1]
    assert [b["type"] for b in first["blocks"]] == ["tool_use"]  # still in progress

    feed(sid, [cx.command("completed", "item_0", "pytest -q", "..F\n1 failed", 1, "failed")])
    parts = stored_parts(rows, sid)
    assert len(parts) == 2
    first = parts[0][1]
    assert first["blocks"][1] == {"type": "tool_result", "tool_use_id": "item_0",
                                  "content": "..F\n1 failed", "is_error": True}

    feed(sid, [cx.turn_completed()])

    system, row = messages(sid)
    assert system["role"] == "system"
    assert row["content"] == "Running the tests."
    kept = [(b["type"], b.get("content")) for b in row["content_blocks"]]
    if kind == "autonomous":
        assert kept == [("tool_use", None), ("tool_result", "..F\n1 failed"), ("text", None)]
    else:
        assert kept == [("tool_use", None), ("text", None)]
    assert stored_parts(rows, sid) == []
    assert counts(sid) == (2, 2)


def test_the_same_item_ids_in_the_next_run_are_new_items(codex_session, feed, messages):
    sid = codex_session("agent", {})
    run = [cx.turn_started(), cx.command("started", "item_0", "ls"),
           cx.command("completed", "item_0", "ls", "a\n", 0, "completed"),
           cx.message("item_1", "One file."), cx.turn_completed()]
    feed(sid, [cx.turn_started(), cx.message("item_0", "Hello."), cx.turn_completed()])
    feed(sid, run)
    feed(sid, run)  # item ids restart, the text repeats: a new turn all the same
    _, first, second = messages(sid)
    assert (first["content"], second["content"]) == ("One file.", "One file.")
    assert first["turn_key"] != second["turn_key"]
    assert [b.get("name") for b in second["content_blocks"]] == ["command_execution", None]
