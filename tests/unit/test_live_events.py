"""The live events each provider fixture yields, through the ingest use cases on fakes.

Each `tests/fixtures/streams/<provider>/<name>.jsonl` has its events in
`<name>.events.json`: [id, name, data] per event, the completion's last.
"""
import json
from datetime import datetime
from datetime import timezone
from pathlib import Path

import pytest

from app.core.records import Chunk
from app.services.ingest import complete_session
from app.services.ingest import ingest_output
from app.services.live import events as live_stream
from app.transcript.open_turn import open_turn
from tests.fakes import FakeUnitOfWork

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
FIXTURES = sorted(STREAMS.glob("*/*.jsonl"))
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def live_events_of(path, batch=1000):
    """[[id, name, data]] of every event the fixture's lines and completion yield,
    the lines posted `batch` per request."""
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, path.parent.name, "2026-01-02T03:04:05.000000Z")
    lines = path.read_text().splitlines()
    for at in range(0, len(lines), batch):
        chunks = [Chunk(line, "stdout", at + n) for n, line in enumerate(lines[at:at + batch])]
        ingest_output("s1", chunks, uow, retention_seconds=60, clock=lambda: NOW)
    complete_session("s1", 0, uow, clock=lambda: NOW)
    return list(stored_events(uow))


def stored_events(uow):
    rows = sorted(uow.outputs.live.items()) + [(("s1", uow.final_events.rows["s1"][0]),
                                                 uow.final_events.rows["s1"][1])]
    for (_, index), text in rows:
        for n, line in enumerate(text.split("\n")):
            name, data = line.split(" ", 1)
            yield [f"{index}.{n}", name, json.loads(data)]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_fixture_yields_its_expected_events(path):
    expected = json.loads(path.with_suffix(".events.json").read_text())
    assert live_events_of(path) == expected


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_one_line_per_request_yields_the_same_events(path):
    """The live turn is stored between requests: how lines are batched changes nothing."""
    assert live_events_of(path, batch=1) == live_events_of(path, batch=7) == live_events_of(path)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_ids_increase_and_every_turn_started_completes_once(path):
    events = live_events_of(path)
    ids = [tuple(int(part) for part in event_id.split(".")) for event_id, _, _ in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    started = [data["turn_id"] for _, name, data in events if name == "turn.started"]
    completed = [data["turn_id"] for _, name, data in events if name == "turn.completed"]
    assert started == completed and len(set(started)) == len(started)
    assert events[-1][1] == "session.completed"


def test_turn_completed_names_the_row_the_flush_wrote():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", "t")
    lines = (STREAMS / "claude" / "session.jsonl").read_text().splitlines()
    ingest_output("s1", [Chunk(line, "stdout", n) for n, line in enumerate(lines)], uow,
                  retention_seconds=60, clock=lambda: NOW)
    events = list(stored_events_without_completion(uow))
    completed = [data for name, data in events if name == "turn.completed"]
    rows = {m.turn_key: m.id for m in uow.messages.rows}
    assert [c["message_id"] for c in completed] == [rows.get(c["transcript_turn_id"])
                                                    for c in completed]
    assert completed[0]["message_id"] is not None  # the first turn wrote a row


def stored_events_without_completion(uow):
    for _, text in sorted(uow.outputs.live.items()):
        for line in text.split("\n"):
            name, data = line.split(" ", 1)
            yield name, json.loads(data)


def test_a_re_sent_line_yields_no_events():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "claude", "t")
    line = (STREAMS / "claude" / "session.jsonl").read_text().splitlines()[4]
    ingest_output("s1", [Chunk(line, "stdout", 0)], uow, retention_seconds=60)
    ingest_output("s1", [Chunk(line, "stdout", 1)], uow, retention_seconds=60)
    assert [index for _, index in uow.outputs.live] == [0]


def test_the_open_turn_is_what_the_turn_holds_so_far_under_its_live_id():
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, "gemini", "t")
    lines = (STREAMS / "gemini" / "session.jsonl").read_text().splitlines()[:7]
    ingest_output("s1", [Chunk(line, "stdout", n) for n, line in enumerate(lines)], uow,
                  retention_seconds=60, clock=lambda: NOW)
    turn = open_turn(uow.turn_states.load("s1"), uow.turn_states.load_parts("s1"))
    first = json.loads(uow.outputs.live[("s1", 3)].split("\n")[0].split(" ", 1)[1])
    assert turn["turn_id"] == first["turn_id"] == "t3"
    assert turn["visible_text"] == "Let me check the directory."
    assert [b["type"] for b in turn["content_blocks"]] == ["text", "tool_use", "tool_result"]


def test_no_open_turn_between_turns():
    assert open_turn(None, []) is None
    assert open_turn({"turn": {"saved_parts": 0}, "recent_ids": [], "live": None}, []) is None


@pytest.mark.parametrize("raw, cursor", [
    (None, live_stream.EventCursor(-1)), ("", live_stream.EventCursor(-1)),
    ("-1", live_stream.EventCursor(-1)), ("-1.3", live_stream.EventCursor(-1)),
    ("57", live_stream.EventCursor(57)), ("57.1", live_stream.EventCursor(57, 1)),
    ("0.0", live_stream.EventCursor(0, 0)),
])
def test_cursors_are_read(raw, cursor):
    assert live_stream.parse_cursor(raw) == cursor


@pytest.mark.parametrize("raw", ["x", "1.", ".1", "1.2.3", "+1", " 1", "1_0", "-2", "1.-1",
                                 "٣", "9" * 21, str(2**63), f"1.{2**31}"])
def test_malformed_cursors_are_refused(raw):
    with pytest.raises(live_stream.InvalidEventId):
        live_stream.parse_cursor(raw)


def test_a_cursor_admits_what_comes_after_it():
    mid, whole = live_stream.EventCursor(5, 1), live_stream.EventCursor(5)
    assert [mid.admits(*e) for e in [(4, 9), (5, 1), (5, 2), (6, 0)]] == [False, False, True, True]
    assert [whole.admits(*e) for e in [(5, 9), (6, 0)]] == [False, True]
