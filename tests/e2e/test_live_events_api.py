"""GET .../events and open_turn through the test client."""
import json
from pathlib import Path

import pytest

from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines
from tests.e2e.test_stream_replay import parse_sse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
PARTIAL = FIXTURES / "claude" / "partial_messages"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": True, "STREAM_POLL_SECONDS": 0.01}


def read_events(client, sid, query="", headers=None):
    response = client.get(f"/api/remote/sessions/{sid}/events{query}", headers=headers or {})
    assert response.status_code == 200, response.get_json()
    assert response.mimetype == "text/event-stream"
    body = response.get_data(as_text=True)
    assert body.startswith("retry: ")
    return parse_sse(body)


@pytest.fixture
def finished(client):
    sid = create_session(client)
    lines = PARTIAL.with_suffix(".jsonl").read_text().splitlines()
    post_lines(client, sid, lines[:20])
    post_lines(client, sid, lines[20:], start_seq=20)
    complete(client, sid)
    return sid


def test_a_whole_claude_fixture_replays_with_its_names_and_ids(client, finished):
    events = read_events(client, finished)
    expected = json.loads(PARTIAL.with_suffix(".events.json").read_text())
    assert [(name, event_id) for name, event_id, _ in events[:-1]] == [
        (name, event_id) for event_id, name, _ in expected]
    texts = [data["text"] for name, _, data in events if name == "block.delta"]
    assert "".join(texts[:2]) == "The user wants the failing test."
    assert events[-1] == ("end", None, {"status": "completed", "exit_code": 0,
                                        "last_event_id": "35.0"})
    assert [name for name, _, _ in events].count("end") == 1
    # The row the first turn wrote is the one turn.completed names.
    rows = client.get(f"/api/remote/sessions/{finished}/messages").get_json()["messages"]
    first = next(data for name, _, data in events if name == "turn.completed")
    assert first["message_id"] == rows[-2]["id"]
    assert rows[-2]["metadata"]["turn_id"] == first["transcript_turn_id"]


@pytest.mark.parametrize("how", ["header", "query"])
def test_resume_mid_line_sends_the_rest_of_that_line_first(client, finished, how):
    everything = read_events(client, finished)
    ids = [event_id for _, event_id, _ in everything]
    at = ids.index("17.0")  # line 17: a block.completed, then a usage
    headers, query = ({"Last-Event-ID": "17.0"}, "") if how == "header" else ({}, "?after=17.0")
    resumed = read_events(client, finished, query, headers)
    assert resumed == everything[at + 1:]
    assert resumed[0][1] == "17.1" and resumed[0][0] == "usage"


def test_a_bare_line_index_resumes_after_all_of_that_line(client, finished):
    resumed = read_events(client, finished, "?after=17")
    assert resumed[0][1] == "18.0"


@pytest.mark.parametrize("cursor", ["abc", "1.2.3", "1.", "-2", "1.-1", "+3", "1e3",
                                    str(2**64), "\u0663"])
def test_malformed_cursors_are_400_before_the_stream(client, finished, cursor):
    for response in (client.get(f"/api/remote/sessions/{finished}/events",
                                query_string={"after": cursor}),
                     client.get(f"/api/remote/sessions/{finished}/events",
                                headers={"Last-Event-ID": cursor})):
        assert response.status_code == 400
        error = response.get_json()["error"]
        assert error["code"] == "invalid_event_id" and error["details"] == {"cursor": cursor}
        assert "event id" in error["message"] or "range" in error["message"]


def test_a_well_formed_id_past_the_end_gets_just_the_end(client, finished):
    events = read_events(client, finished, "?after=9000.4")
    assert [name for name, _, _ in events] == ["end"]


def test_a_cursor_before_retention_gets_one_reset(client, finished, rows):
    rows("DELETE FROM remote_runtime_outputs WHERE event_index < 20")
    events = read_events(client, finished, "?after=3.0")
    assert events[0][0] == "reset" and events[0][1] == "19"
    assert events[0][2]["oldest_event_index"] == 20
    assert events[1][1] == "20.0"
    assert [name for name, _, _ in events].count("reset") == 1
    # Its id, sent back as Last-Event-ID, resumes after the gap without another reset.
    assert read_events(client, finished, headers={"Last-Event-ID": "19"}) == events[1:]


def test_an_unknown_session_is_404(client):
    response = client.get("/api/remote/sessions/nope/events")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"


def test_open_turn_shows_half_a_turn_and_is_gone_after_its_result(client):
    sid = create_session(client)
    lines = (FIXTURES / "claude" / "session.jsonl").read_text().splitlines()
    post_lines(client, sid, lines[:1])
    counted = get_session(client, sid)
    assert counted["open_turn"] is None
    post_lines(client, sid, lines[1:7], start_seq=1)
    session = get_session(client, sid)
    turn = session["open_turn"]
    assert turn["visible_text"] == "I'll look at the repository layout first."
    assert [b["type"] for b in turn["content_blocks"]] == ["thinking", "text", "tool_use",
                                                           "tool_result"]
    started = next(data for name, _, data in read_events_live(client, sid)
                   if name == "turn.started")
    assert turn["turn_id"] == started["turn_id"] and turn["event_index"] == 2
    for key in ("message_count", "conversation_turn_count", "visible_message_count"):
        assert session[key] == counted[key]
    post_lines(client, sid, lines[7:10], start_seq=7)
    after = get_session(client, sid)
    assert after["open_turn"] is None
    assert after["message_count"] == counted["message_count"] + 1


def read_events_live(client, sid):
    """The events so far of a running session: the stream is cut after its first write."""
    response = client.get(f"/api/remote/sessions/{sid}/events", buffered=False)
    chunks = response.response
    text = next(chunks) + next(chunks)  # the retry line, then the first page
    response.close()
    return parse_sse(text.decode() if isinstance(text, bytes) else text)
