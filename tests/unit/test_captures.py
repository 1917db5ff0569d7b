"""The captures of the real agent CLIs (tests/fixtures/captures, made by
tests/agents/capture.py at the versions .ci/agents pins): there is one for every pinned
version and scenario, and the parsers know every line in them, so a CLI that changes its
output fails here the day it is captured."""
import json

import pytest

from tests.agents import clis
from tests.agents import linetypes
from tests.agents import scenarios
from tests.agents.capture import OUT
from tests.agents.capture import line_type

FOLDERS = sorted(path for path in OUT.iterdir() if path.is_dir())


@pytest.mark.parametrize("name", clis.NAMES)
def test_each_pinned_cli_has_a_capture_of_every_scenario(name):
    folder = OUT / f"{name}-{clis.pinned(name)}"
    assert folder.is_dir(), f"no capture of the pinned {name}: run python -m tests.agents.capture"
    captured = {path.stem for path in folder.glob("*.jsonl")}
    assert {scenario for scenario in scenarios.names() if scenarios.played_by(scenario, name)} <= captured
    assert all(path.read_text().strip() for path in folder.glob("*.jsonl"))


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_the_parsers_know_every_line_type_the_cli_printed(folder):
    unknown = {path.name: linetypes.unknown_lines(path) for path in sorted(folder.glob("*.jsonl"))}
    assert {name: lines for name, lines in unknown.items() if lines} == {}


@pytest.mark.parametrize("cli, line", [
    ("claude", '{"type": "brand_new_event", "session_id": "s"}'),
    ("claude", '{"type": "assistant", "message": {"id": "m", "content": [{"type": "hologram"}]}}'),
    ("claude", '{"type": "system", "subtype": "brand_new_notice", "uuid": "u", "session_id": "s"}'),
    ("codex", '{"type": "item.completed", "item": {"id": "item_0", "type": "brand_new_item"}}'),
    ("gemini", '{"type": "brand_new_event", "timestamp": "2026-01-01T00:00:00Z"}'),
    ("gemini", "not json"),
])
def test_a_line_of_a_new_type_is_reported(tmp_path, cli, line):
    folder = tmp_path / f"{cli}-9.9.9"
    folder.mkdir()
    (folder / "new.jsonl").write_text(line + "\n")
    assert [number for number, _ in linetypes.unknown_in(tmp_path)[f"{cli}-9.9.9/new.jsonl"]] == [1]


def test_line_types_name_claude_system_subtypes_and_codex_item_kinds():
    assert line_type("claude", {"type": "system", "subtype": "init"}) == "system/init"
    assert line_type("codex", {"type": "item.started", "item": {"type": "command_execution"}}) == \
        "item.started/command_execution"
    assert line_type("gemini", {"type": "tool_use"}) == "tool_use"


def test_the_interactive_claude_captures_hold_the_permission_request_and_the_acknowledgements():
    folder = OUT / f"claude-{clis.pinned('claude')}"
    lines = [json.loads(text) for text in (folder / "interactive_permission.jsonl").read_text().splitlines()]
    kinds = [line_type("claude", obj) for obj in lines]
    assert "control_request" in kinds and "command_lifecycle" in kinds
    [request] = [obj for obj in lines if obj["type"] == "control_request"]
    assert request["request"]["subtype"] == "can_use_tool" and request["request"]["tool_name"] == "Bash"
    replays = [obj for obj in lines if obj["type"] == "user" and obj.get("isReplay")]
    assert [obj["uuid"] for obj in replays] == ["00000000-0000-4000-8000-000000000001"]


def test_new_captures_only_the_versions_not_captured_yet(tmp_path, monkeypatch):
    """The one-line re-capture with the newest CLIs (docs/agents.md) passes --new: a version
    captured already is not re-written (its lines would differ in ids and times only)."""
    from tests.agents import capture

    (tmp_path / "claude-1.0.0").mkdir()
    monkeypatch.setattr(clis, "missing", lambda name: None)
    monkeypatch.setattr(clis, "version", {"claude": "1.0.0", "codex": "2.0.0", "gemini": "3.0.0"}.get)
    done = []
    monkeypatch.setattr(capture, "capture_cli", lambda cli, only, out: done.append((cli, out)))
    assert capture.main(["--out", str(tmp_path), "--new", "--check"]) == 0
    assert done == [("codex", tmp_path), ("gemini", tmp_path)]
    capture.main(["--out", str(tmp_path), "--cli", "claude"])
    assert done[-1] == ("claude", tmp_path)
