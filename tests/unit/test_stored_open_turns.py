"""Open turns stored by an earlier release go on where they stood.

tests/fixtures/open_turns/v0.json holds open turns as the release before the
versioned format stored them (the session's turn_state and its saved parts),
captured mid-turn from bundled sample streams. A session whose open turn is read
from that file, and is fed the rest of the stream, ends with the same rows, live
events, evidence and state as one that was never interrupted.
"""
import json
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from pathlib import Path

import pytest

from app.services import ingest
from app.services.models import Chunk
from tests.fakes import FakeUnitOfWork

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPEN_TURNS = json.loads((FIXTURES / "open_turns" / "v0.json").read_text())["open_turns"]
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def feed(uow, lines, first):
    """One line per request, line i received at START + i seconds (as captured)."""
    for offset, line in enumerate(lines):
        moment = START + timedelta(seconds=first + offset)
        ingest.ingest_output("s1", [Chunk(line, "stdout", first + offset)], uow,
                             retention_seconds=60, clock=lambda moment=moment: moment)


def session(provider):
    uow = FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, provider, "t0")
    return uow


def outcome(uow):
    """Everything the session's lines left behind."""
    return {
        "messages": [(m.id, m.role, m.content, m.content_blocks, m.metadata, m.source, m.turn_key)
                     for m in uow.messages.rows],
        "live": dict(uow.outputs.live),
        "final": uow.final_events.rows,
        "evidence": uow.evidence.rows,
        "turn_state": uow.turn_states.rows,
        "parts": uow.turn_states.parts,
        "counters": uow.sessions.rows,
    }


@pytest.mark.parametrize("name", sorted(OPEN_TURNS))
def test_an_open_turn_of_the_previous_format_goes_on_as_if_never_stored(name):
    case = OPEN_TURNS[name]
    assert "v" not in case["turn_state"]  # the format before version 1
    lines = (FIXTURES / "streams" / case["stream"]).read_text().splitlines()
    split = case["split"]

    whole = session(case["provider"])
    feed(whole, lines, 0)
    ingest.complete_session("s1", 0, whole, clock=lambda: START + timedelta(hours=1))

    restored = session(case["provider"])
    feed(restored, lines[:split], 0)
    restored.turn_states.rows["s1"] = case["turn_state"]  # as the earlier release left it
    restored.turn_states.parts["s1"] = case["parts"]
    feed(restored, lines[split:], split)
    ingest.complete_session("s1", 0, restored, clock=lambda: START + timedelta(hours=1))

    assert outcome(restored) == outcome(whole)
    assert whole.messages.rows and whole.final_events.rows
