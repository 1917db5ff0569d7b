"""The stored open turn: versioned, namespaced, read by name; and open turns stored
by an earlier release go on where they stood.

tests/fixtures/open_turns/v0.json holds open turns as the release before the
versioned format stored them (the session's turn_state and its saved parts),
captured mid-turn from bundled sample streams. A session whose open turn is read
from that file, and is fed the rest of the stream, ends with the same rows, live
events, evidence and state as one that was never interrupted.
"""
import copy
import dataclasses
import json
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from pathlib import Path

import pytest

from app.core.records import Chunk
from app.services import ingest
from app.transcript.open_turn import VERSION
from app.transcript.open_turn import OpenTurn
from app.transcript.open_turn import UnknownTurnFormat
from app.transcript.open_turn import has_open_turn
from app.transcript.open_turn import open_turn
from app.transcript.turns import TurnBuffer
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

    assert outcome(restored) == without_last_init(outcome(whole))
    assert whole.messages.rows and whole.final_events.rows


def without_last_init(result):
    """`outcome` without the mark of the last Claude init note, which format 0 cannot
    hold (a session restored from it writes the next repeated init once more)."""
    states = {sid: {**state, "stream": {k: v for k, v in state["stream"].items()
                                        if k != "last_init"}}
              if isinstance(state, dict) and "stream" in state else state
              for sid, state in result["turn_state"].items()}
    return {**result, "turn_state": states}


def since_v0(stored):
    """A stored open turn without what releases since format 0 added beside it: the
    thread of Codex's running total, which the thread's next line names again (the
    test above shows the session goes on the same), and the mark of the last Claude
    init note."""
    stream = {key: value for key, value in stored["stream"].items()
              if key not in ("thread_usage", "last_init")}
    return {**stored, "stream": stream}


def snapshot_at_split(case):
    """The open turn this release stores after the case's first `split` lines."""
    lines = (FIXTURES / "streams" / case["stream"]).read_text().splitlines()
    uow = session(case["provider"])
    feed(uow, lines[:case["split"]], 0)
    return uow.turn_states.rows["s1"], uow.turn_states.parts["s1"]


@pytest.mark.parametrize("name", sorted(OPEN_TURNS))
def test_an_open_turn_is_stored_versioned_and_namespaced_and_restores_to_itself(name):
    stored, _ = snapshot_at_split(OPEN_TURNS[name])
    assert stored["v"] == VERSION
    assert set(stored) <= {"v", "turn", "stream", "live", "evidence"}
    # thread_usage only for a provider that reports a running total of its thread (Codex),
    # last_init only for one whose init names its agent session (Claude)
    assert {"recent_ids", "replay", "runs"} <= set(stored["stream"]) \
        <= {"recent_ids", "replay", "runs", "thread_usage", "last_init"}
    assert OpenTurn.restore(copy.deepcopy(stored)).snapshot() == stored


@pytest.mark.parametrize("name", sorted(OPEN_TURNS))
def test_the_previous_format_reads_as_this_one_wrote_it(name):
    case = OPEN_TURNS[name]
    stored, parts = snapshot_at_split(case)
    assert since_v0(OpenTurn.restore(copy.deepcopy(case["turn_state"])).snapshot()) \
        == since_v0(stored)
    # GET of one session shows the same open turn from either format
    assert has_open_turn(case["turn_state"]) and has_open_turn(stored)
    assert open_turn(case["turn_state"], case["parts"]) == open_turn(stored, parts)


def test_keys_this_release_does_not_know_are_ignored():
    stored, _ = snapshot_at_split(OPEN_TURNS["codex/item_states"])
    later = copy.deepcopy(stored)
    later["queue"] = {"a later": "namespace"}
    later["turn"]["a_later_field"] = 1
    later["stream"]["a_later_field"] = 2
    later["live"]["a_later_field"] = 3
    assert OpenTurn.restore(later).snapshot() == stored


def test_keys_a_row_lacks_take_their_defaults():
    assert OpenTurn.restore({"v": VERSION}).snapshot() == OpenTurn().snapshot()
    assert OpenTurn.restore(None).snapshot() == OpenTurn().snapshot()
    stored, _ = snapshot_at_split(OPEN_TURNS["claude/test_runs"])
    del stored["turn"]["done_items"], stored["stream"]["runs"], stored["live"]["usage"]
    again = OpenTurn.restore(stored).snapshot()
    assert (again["turn"]["done_items"], again["stream"]["runs"], again["live"]["usage"]) == (
        [], 0, {})


def test_a_format_of_a_later_release_is_refused_rather_than_read_wrong():
    with pytest.raises(UnknownTurnFormat):
        OpenTurn.restore({"v": VERSION + 1, "turn": {}})


def test_every_field_of_the_open_turn_but_its_parts_is_stored_by_name_and_read_back():
    stored_fields = {f.name for f in dataclasses.fields(TurnBuffer)} - {"parts", "restated"}
    buffer = TurnBuffer(**{name: f"value of {name}" for name in stored_fields})
    assert set(buffer.header()) == stored_fields  # a new field must be given a stored name
    assert TurnBuffer.from_header(buffer.header()) == buffer
