"""The SSE stream through the test client: replay, resume, reset, end."""
import json

import pytest

from app.streaming import routes
from app.streaming import sse
from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines


def parse_sse(text):
    """[(event, id, data)] of every event in an SSE body; comments and retry dropped."""
    events = []
    for block in text.split("\n\n"):
        fields = {"data": []}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            if name == "data":
                fields["data"].append(value)
            else:
                fields[name] = value
        if "event" in fields:
            events.append((fields["event"], fields.get("id"),
                           json.loads("\n".join(fields["data"]))))
    return events


def read_stream(client, sid, query="", headers=None):
    response = client.get(f"/api/remote/sessions/{sid}/stream{query}", headers=headers or {})
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    return response, parse_sse(response.get_data(as_text=True))


@pytest.fixture
def finished_session(client):
    sid = create_session(client)
    lines = [cl.system_init(), cl.assistant(cl.text("hi")), "not json", cl.result()]
    post_lines(client, sid, lines)
    post_lines(client, sid, ["warning: disk"], start_seq=len(lines), stream="stderr")
    complete(client, sid)
    return sid, lines + ["warning: disk"]


def test_a_completed_session_replays_everything_then_ends_once(client, finished_session):
    sid, lines = finished_session
    response, events = read_stream(client, sid)
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Accel-Buffering"] == "no"
    outputs = [e for e in events if e[0] == "output"]
    assert [e[2]["payload"] for e in outputs] == lines
    assert [int(e[1]) for e in outputs] == [e[2]["event_index"] for e in outputs] == [0, 1, 2, 3, 4]
    assert outputs[-1][2]["stream"] == "stderr"
    assert events[-1] == ("end", None, {"status": "completed", "exit_code": 0,
                                        "last_event_index": 4})
    assert [e[0] for e in events].count("end") == 1
    assert response.get_data(as_text=True).startswith("retry: ")


@pytest.mark.parametrize("how", ["header", "query"])
def test_resume_after_a_cursor_sends_only_later_events(client, finished_session, how):
    sid, lines = finished_session
    if how == "header":
        _, events = read_stream(client, sid, headers={"Last-Event-ID": "2"})
    else:
        _, events = read_stream(client, sid, "?after=2")
    assert [e[2]["event_index"] for e in events if e[0] == "output"] == [3, 4]


def test_client_cursor_is_remembered_server_side(client, finished_session):
    sid, _ = finished_session
    read_stream(client, sid, "?client_id=tab-1&after=1")
    _, events = read_stream(client, sid, "?client_id=tab-1")
    assert [e[0] for e in events] == ["end"]
    _, events = read_stream(client, sid, "?client_id=tab-2")
    assert len([e for e in events if e[0] == "output"]) == 5


def test_a_cursor_before_the_retained_buffer_gets_one_reset(client, finished_session, rows):
    sid, lines = finished_session
    rows("DELETE FROM remote_runtime_outputs WHERE event_index < 3")
    _, events = read_stream(client, sid, "?after=0")
    assert events[0][0] == "reset"
    assert events[0][1] == "2"
    assert events[0][2]["oldest_event_index"] == 3
    assert [e[2]["event_index"] for e in events if e[0] == "output"] == [3, 4]
    assert [e[0] for e in events].count("reset") == 1


def test_prune_outputs_deletes_only_expired_rows_and_keeps_the_transcript(
        app, client, runner, rows):
    sid = create_session(client)
    post_lines(client, sid, [cl.assistant(cl.text("kept")), cl.result(), "x"])
    rows("UPDATE remote_runtime_outputs SET expires_at = '2000-01-01T00:00:00.000000Z'"
         " WHERE event_index < 2")
    result = runner.invoke(args=["prune-outputs", "--batch-size", "1"])
    assert result.exit_code == 0 and "deleted 2" in result.output
    left = [r[0] for r in rows("SELECT event_index FROM remote_runtime_outputs")]
    transcript = rows("SELECT content FROM session_messages")
    assert left == [2]
    assert transcript == [("kept",)]


@pytest.mark.parametrize("query, headers", [
    ("?after=abc", {}), ("?after=-2", {}), ("", {"Last-Event-ID": "x"}),
])
def test_bad_cursors_are_400_before_streaming(client, finished_session, query, headers):
    sid, _ = finished_session
    response = client.get(f"/api/remote/sessions/{sid}/stream{query}", headers=headers)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_event_id"


def test_a_client_id_too_long_is_422_before_streaming(client, finished_session):
    sid, _ = finished_session
    response = client.get(f"/api/remote/sessions/{sid}/stream?client_id=" + "c" * 201)
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == "invalid_client_id"


def test_unknown_session_stream_is_404(client):
    response = client.get("/api/remote/sessions/nope/stream")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"


# Lines whose JSON escaping differs from their text: quotes, backslashes, tabs and
# other control characters, non-ASCII, U+2028, a character outside the BMP.
AWKWARD_LINES = [
    cl.assistant(cl.text('say "hi" \\ then\tleave')),
    "not json: \x01\x1f \u00e9 \u2028 \U0001f600",
    "",
    cl.result(),
    '{"type": "progress", "note": "</script>"}',
    "x" * 3000,
    "last before stderr",
]


@pytest.fixture
def awkward_session(client):
    sid = create_session(client)
    post_lines(client, sid, AWKWARD_LINES)
    post_lines(client, sid, ["warning: \u00e9"], start_seq=len(AWKWARD_LINES), stream="stderr")
    complete(client, sid)
    return sid


def documented_events(rows, sid, after=-1):
    """The output events of the session's buffer as docs/api.md writes them, built
    with the generic framing and json.dumps from the stored columns."""
    stored = rows("SELECT event_index, stream, payload, created_at FROM remote_runtime_outputs"
                  " WHERE session_id = ? AND event_index > ? ORDER BY event_index", sid, after)
    return "".join(sse.event("output", {"event_index": index, "stream": stream,
                                        "payload": payload, "created_at": created}, index)
                   for index, stream, payload, created in stored)


END = 'event: end\ndata: {"status":"completed","exit_code":0,"last_event_index":7}\n\n'


@pytest.mark.parametrize("page_size, write_events", [(5000, 256), (3, 2), (3, 256), (1, 1),
                                                     (8, 3)])
def test_replay_is_byte_for_byte_the_documented_events_across_page_and_write_boundaries(
        app, client, rows, monkeypatch, awkward_session, page_size, write_events):
    app.config["STREAM_PAGE_SIZE"] = page_size
    monkeypatch.setattr(routes, "WRITE_EVENTS", write_events)
    response = client.get(f"/api/remote/sessions/{awkward_session}/stream")
    body = response.get_data(as_text=True)
    assert body == "retry: 3000\n\n" + documented_events(rows, awkward_session) + END
    outputs = [e for e in parse_sse(body) if e[0] == "output"]
    assert [e[2]["payload"] for e in outputs] == AWKWARD_LINES + ["warning: \u00e9"]


@pytest.mark.parametrize("last_event_id", [0, 1, 4, 6])
def test_last_event_id_inside_a_page_and_a_write_resumes_right_after_it(
        app, client, rows, monkeypatch, awkward_session, last_event_id):
    app.config["STREAM_PAGE_SIZE"] = 3
    monkeypatch.setattr(routes, "WRITE_EVENTS", 2)
    response = client.get(f"/api/remote/sessions/{awkward_session}/stream",
                          headers={"Last-Event-ID": str(last_event_id)})
    body = response.get_data(as_text=True)
    assert body == ("retry: 3000\n\n" + documented_events(rows, awkward_session, last_event_id)
                    + END)


def test_rows_stored_without_their_event_json_stream_the_same_bytes(
        app, client, rows, awkward_session):
    """Rows written before migration 0010 (or by an instance not yet upgraded) have
    no stored event JSON; replay builds it, in any page, next to rows that have it."""
    app.config["STREAM_PAGE_SIZE"] = 3
    before = client.get(f"/api/remote/sessions/{awkward_session}/stream").get_data(as_text=True)
    rows("UPDATE remote_runtime_outputs SET event_json = NULL"
         " WHERE event_index IN (0, 1, 4, 5, 7)")
    after = client.get(f"/api/remote/sessions/{awkward_session}/stream").get_data(as_text=True)
    assert after == before
    assert after == "retry: 3000\n\n" + documented_events(rows, awkward_session) + END


@pytest.mark.parametrize("page_bytes, write_bytes", [(1, 1), (200, 100), (400, 10_000)])
def test_replay_is_byte_for_byte_the_same_across_byte_bounded_pages_and_writes(
        app, client, rows, monkeypatch, awkward_session, page_bytes, write_bytes):
    """Pages cut by STREAM_PAGE_BYTES and writes cut by WRITE_BYTES (issue 29) send
    the same events as any other cut."""
    app.config["STREAM_PAGE_BYTES"] = page_bytes
    monkeypatch.setattr(routes, "WRITE_BYTES", write_bytes)
    response = client.get(f"/api/remote/sessions/{awkward_session}/stream")
    body = response.get_data(as_text=True)
    assert body == "retry: 3000\n\n" + documented_events(rows, awkward_session) + END
