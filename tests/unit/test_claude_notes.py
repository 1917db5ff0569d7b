"""The compact notes Claude's system lines and rate-limit notices become."""
import json

from app.providers.claude import parse_line
from app.transcript import event_types as ev


def note(obj):
    event = parse_line(json.dumps({"uuid": "u-1", **obj}))
    return event.kind, event.text, event.info.get("subtype"), event.identity


def test_a_finished_background_task_is_a_note_with_its_summary():
    line = {"type": "system", "subtype": "task_notification", "task_id": "af0f",
            "tool_use_id": "toolu_1", "status": "completed", "summary": "One, two, three.",
            "usage": {"total_tokens": 96}}
    assert note(line) == (ev.SYSTEM, "Background task completed: One, two, three.",
                          "task_notification", "u-1")
    failed = {**line, "status": "failed", "summary": None, "description": "A sub-agent"}
    assert note(failed)[1] == "Background task failed: A sub-agent"
    assert note({"type": "system", "subtype": "task_notification"})[1] == "Background task finished"


def test_a_compaction_says_how_and_how_much_was_compacted():
    line = {"type": "system", "subtype": "compact_boundary",
            "compact_metadata": {"trigger": "auto", "pre_tokens": 155000}}
    assert note(line)[1] == "Conversation compacted (auto, 155,000 tokens before)"
    bare = {"type": "system", "subtype": "compact_boundary", "compact_metadata": "?"}
    assert note(bare)[1] == "Conversation compacted"


def test_an_api_retry_says_what_failed_and_which_attempt_this_is():
    line = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
            "retry_delay_ms": 616, "error_status": 500, "error": "server_error"}
    assert note(line)[1] == "API error (500 server_error), retry 1 of 10"
    assert note({"type": "system", "subtype": "api_retry", "attempt": "x"})[1] \
        == "API error, retrying"


def test_a_rate_limit_warning_and_refusal_are_notes_and_allowed_is_nothing():
    warning = {"type": "rate_limit_event", "rate_limit_info": {
        "status": "allowed_warning", "utilization": 0.85, "rateLimitType": "five_hour",
        "resetsAt": 1771390800}}
    assert note(warning) == (ev.SYSTEM, "Rate limit warning: 85% of the five-hour limit used;"
                             " resets at 2026-02-18 05:00 UTC", "rate_limit", "u-1")
    refused = {"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "rateLimitType": "seven_day", "resetsAt": 1771390800000}}
    assert note(refused)[1] == "Rate limit reached: the weekly limit; resets at 2026-02-18 05:00 UTC"
    allowed = {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}
    assert parse_line(json.dumps(allowed)).kind == ev.IGNORED
    odd = {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
                                                           "resetsAt": 10**30}}
    assert note(odd)[1] == "Rate limit reached: the limit"


def test_lines_that_tell_a_reader_nothing_stay_silent():
    for line in ({"type": "system", "subtype": "status", "status": "requesting"},
                 {"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 9},
                 {"type": "system", "subtype": "task_started", "description": "A sub-agent"},
                 {"type": "system", "subtype": "background_tasks_changed", "tasks": []}):
        assert note(line)[1] == "", line
