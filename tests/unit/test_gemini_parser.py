"""The Gemini CLI stream-json parser, and how a turn joins its streamed text."""
import json
import random

import pytest

from app.providers.gemini import parse_line
from app.transcript.accumulator import Accumulator
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import IGNORED
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TOOL_RESULTS
from app.transcript.event_types import StreamEvent
from app.transcript.transcript_turn import TranscriptTurn

STAMP = "2025-10-10T12:00:00.000Z"


def line(kind, **fields):
    return json.dumps({"type": kind, "timestamp": STAMP, **fields})


def assistant(content, delta=True):
    return line("message", role="assistant", content=content, delta=delta)


def test_init_is_a_session_note():
    event = parse_line(line("init", session_id="s-1", model="gemini-2.5-pro"))
    assert (event.kind, event.text) == (SYSTEM, "Session started: model=gemini-2.5-pro")


def test_assistant_deltas_are_flagged_text_blocks_and_user_echoes_are_ignored():
    assert parse_line(assistant("4")).blocks == ({"type": "text", "text": "4", "delta": True},)
    assert parse_line(assistant("4", delta=False)).blocks == ({"type": "text", "text": "4"},)
    assert parse_line(line("message", role="user", content="2+2?")).kind == IGNORED


def test_tool_use_and_result_map_to_blocks():
    use = parse_line(line("tool_use", tool_name="Read", tool_id="read-1",
                          parameters={"file_path": "a.txt"}))
    assert use.kind == ASSISTANT
    assert use.blocks == ({"type": "tool_use", "id": "read-1", "name": "Read",
                           "input": {"file_path": "a.txt"}},)
    ok = parse_line(line("tool_result", tool_id="read-1", status="success", output="hello"))
    assert ok.kind == TOOL_RESULTS
    assert ok.blocks == ({"type": "tool_result", "tool_use_id": "read-1", "content": "hello",
                          "is_error": False},)
    bad = parse_line(line("tool_result", tool_id="read-1", status="error",
                          error={"type": "FILE_NOT_FOUND", "message": "File not found"}))
    assert bad.blocks[0]["content"] == "File not found" and bad.blocks[0]["is_error"] is True


def test_error_is_a_note_with_its_severity():
    event = parse_line(line("error", severity="warning", message="Loop detected"))
    assert (event.kind, event.text) == (SYSTEM, "Warning: Loop detected")


def test_result_closes_the_turn_with_status_and_stats():
    stats = {"total_tokens": 100, "input_tokens": 50, "output_tokens": 50, "cached": 0,
             "input": 50, "duration_ms": 1200, "tool_calls": 2}
    ok = parse_line(line("result", status="success", stats=stats))
    assert ok.kind == RESULT
    assert ok.info == {"subtype": "success", "is_error": False, "duration_ms": 1200,
                       "stats": stats}
    failed = parse_line(line("result", status="error",
                             error={"type": "MaxSessionTurnsError", "message": "Too many"}))
    assert failed.info == {"subtype": "error", "is_error": True, "result": "Too many",
                           "error_type": "MaxSessionTurnsError"}


def test_a_gemini_line_is_named_by_its_timestamp_and_text():
    lines = [line("init", model="m"), assistant("x"), assistant("y"), line("tool_use", tool_id="t"),
             line("tool_result", tool_id="t", status="success"), line("result", status="success")]
    names = [parse_line(raw).identity for raw in lines]
    assert all(name.startswith(f"gemini:{STAMP}:") for name in names)
    assert len(set(names)) == len(lines)  # same timestamp, different text
    assert [parse_line(raw).identity for raw in lines] == names  # the same line, the same name
    later = json.dumps({"type": "message", "timestamp": "2030-01-01T00:00:00.001Z", "role": "assistant",
                        "content": "x", "delta": True})
    assert parse_line(later).identity not in names


def test_a_gemini_line_without_a_timestamp_has_no_identity():
    assert parse_line(json.dumps({"type": "message", "role": "assistant", "content": "x"})).identity is None
    assert parse_line("YOLO mode is enabled.").identity is None


def close(lines):
    acc = Accumulator()
    for index, raw in enumerate(lines):
        acc.feed(parse_line(raw), index)
    return TranscriptTurn.from_turn(acc.close())


def texts(turn):
    return tuple(b["text"] for b in turn.content_blocks if b["type"] == "text")


def test_a_turn_concatenates_a_run_of_deltas_and_breaks_it_at_other_blocks():
    turn = close([
        assistant("Let me "), assistant("check."),
        line("tool_use", tool_name="ls", tool_id="t1", parameters={}),
        line("tool_result", tool_id="t1", status="success", output="a"),
        assistant("Found "), assistant("it."),
    ])
    assert texts(turn) == ("Let me check.", "Found it.")
    assert turn.visible_text == "Let me check.\n\nFound it."


def test_a_message_without_the_delta_flag_starts_a_paragraph_of_its_own():
    turn = close([assistant("Done"), assistant("."), assistant("All set.", delta=False),
                  assistant("Next"), assistant(" step")])
    assert texts(turn) == ("Done.", "All set.", "Next step")


@pytest.mark.parametrize("raw", [
    "", "not json", "[]", "null", '{"type": 7}', '{"type": "stats_update"}',
    '{"type": "message", "role": "assistant"}',
    '{"type": "message", "role": "assistant", "content": ""}',
    '{"type": "message", "role": "system", "content": "x"}',
])
def test_junk_and_unknown_lines_are_ignored(raw):
    assert parse_line(raw).kind == IGNORED


@pytest.mark.parametrize("raw", [
    '{"type": "message", "role": "assistant", "content": [1, {"text": 2}, {"text": "ok"}]}',
    '{"type": "message", "role": "assistant", "content": {"text": "x"}, "delta": "yes"}',
    '{"type": "tool_result", "status": "error", "error": "boom"}',
    '{"type": "tool_result", "status": "error", "error": {"message": ["x"]}}',
    '{"type": "result", "status": null, "stats": [], "error": {"message": 1}}',
    '{"type": "error", "severity": 3, "message": null}', '{"type": "init", "model": []}',
    '{"type": "tool_use", "tool_id": {"a": 1}, "parameters": null}',
])
def test_odd_known_lines_never_raise(raw):
    assert isinstance(parse_line(raw), StreamEvent)


def test_random_objects_of_known_shapes_never_raise():
    rng = random.Random(2718)
    types = ["init", "message", "tool_use", "tool_result", "error", "result"]
    values = [None, True, 0, "", "x", "assistant", "error", "success", [], {}, [{"text": "t"}],
              {"message": 1}, {"message": "m", "type": 2}]
    keys = ["role", "content", "delta", "tool_id", "tool_name", "parameters", "status",
            "output", "error", "severity", "message", "stats", "model"]
    for _ in range(3000):
        obj = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 6))}
        obj["type"] = rng.choice(types)
        assert isinstance(parse_line(json.dumps(obj)), StreamEvent)
