"""Live events on a real database: stored with their lines, replayed from any id,
and the open turn kept across a restart."""
import json
from pathlib import Path

import pytest

from app import create_app
from app import db
from app.services import sessions
from app.services import streaming
from app.services.live import events as live_stream
from app.services.streaming import StreamSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
FAST = StreamSettings(page_size=7, poll_seconds=0, heartbeat_seconds=60, max_seconds=30)


def replay(session_id, cursor):
    """(ids, names, end) of every event after `cursor` of a completed session."""
    feed = live_stream.EventFeed(session_id, live_stream.parse_cursor(cursor),
                                 db.detached_units_of_work(), sleep=lambda s: None)
    records = list(streaming.follow(feed, settings=FAST))
    events = [e for r in records if isinstance(r, live_stream.Events) for e in r.events]
    assert isinstance(records[-1], live_stream.EventsEnd)
    return events, records[-1]


@pytest.fixture
def finished_claude(new_session, feed, complete):
    sid = new_session()
    lines = (FIXTURES / "claude" / "partial_messages.jsonl").read_text().splitlines()
    feed(sid, lines[:12])
    feed(sid, lines[12:])
    complete(sid)
    return sid


def test_each_line_stores_its_events_and_completion_its_own(finished_claude, rows):
    stored = rows("SELECT event_index, live_events FROM remote_runtime_outputs"
                  " WHERE session_id = ? AND live_events IS NOT NULL ORDER BY event_index",
                  finished_claude)
    final = rows("SELECT event_index, events FROM session_final_events WHERE session_id = ?",
                 finished_claude)
    expected = json.loads((FIXTURES / "claude" / "partial_messages.events.json").read_text())
    got = [[f"{index}.{n}", *line.split(" ", 1)] for index, text in stored + final
           for n, line in enumerate(text.split("\n"))]
    got = [[event_id, name, json.loads(data)] for event_id, name, data in got]
    # The same events as on the fakes, but for the ids of this database's rows.
    row_ids = dict(rows("SELECT turn_key, id FROM session_messages WHERE session_id = ?",
                        finished_claude))
    for event in expected:
        if event[1] == "turn.completed":
            event[2]["message_id"] = row_ids.get(event[2]["transcript_turn_id"])
    for event in expected + got:  # the fakes' clock is not this test's
        event[2].pop("started_at", None)
    assert got == expected
    assert [e[2]["message_id"] for e in got if e[1] == "turn.completed"] == [
        row_ids[key] for key in sorted(row_ids, key=row_ids.get) if key.startswith("turn:")]
    assert final[0][0] == 35  # the session's next_event_index at completion


def test_resuming_after_every_event_yields_exactly_the_rest(app, finished_claude):
    with app.app_context():
        everything, end = replay(finished_claude, None)
        ids = [event_id for event_id, _, _ in everything]
        assert end.last_event_id == ids[-1] == "35.0"
        for at, event_id in enumerate(ids):
            assert replay(finished_claude, event_id)[0] == everything[at + 1:], event_id
        # A bare line index: after every event of that line.
        assert replay(finished_claude, "20")[0] == [e for e in everything
                                                   if int(e[0].split(".")[0]) > 20]
        assert replay(finished_claude, "-1")[0] == everything


def test_an_id_past_the_end_gets_only_the_end(app, finished_claude):
    with app.app_context():
        events, end = replay(finished_claude, "900.0")
    assert events == [] and end.status == "completed"


def test_the_open_turn_survives_a_restart(app, new_session, feed, database_url):
    sid = new_session()
    lines = (FIXTURES / "claude" / "session.jsonl").read_text().splitlines()
    feed(sid, lines[:7])  # half the first turn: text, a tool call and its result
    with app.app_context():
        before = sessions.get_session(sid, db.reading()).open_turn
    restarted = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": database_url,
                            "SECRET_KEY": "tests-only-secret", "AUTH_DISABLED": True})
    with restarted.app_context():
        session = sessions.get_session(sid, db.reading())
        db_engine_dispose(restarted)
    assert session.open_turn == before
    assert session.open_turn["turn_id"] == "t2"
    assert session.open_turn["visible_text"] == "I'll look at the repository layout first."
    assert [b["type"] for b in session.open_turn["content_blocks"]] == [
        "thinking", "text", "tool_use", "tool_result"]
    # Provisional: only the init line's system row is counted.
    assert session.message_count == 1 and session.conversation_turn_count == 0
    feed(sid, lines[7:10])  # ... and the rest of it, through its result line
    with app.app_context():
        assert sessions.get_session(sid, db.reading()).open_turn is None


def db_engine_dispose(app):
    from app.extensions import db as sqla
    sqla.engine.dispose()
