"""SSE framing: the exact bytes an EventSource parses."""
import json

import pytest

from app.formats.output_frames import event_json
from app.streaming import sse


def test_event_with_id_and_json_data():
    assert sse.event("output", {"a": 1, "b": "x"}, 7) == 'id: 7\nevent: output\ndata: {"a":1,"b":"x"}\n\n'


def test_multi_line_text_data_becomes_several_data_lines():
    assert sse.event("note", "one\ntwo") == "event: note\ndata: one\ndata: two\n\n"


def test_json_data_never_spans_lines_even_when_the_payload_has_newlines():
    framed = sse.event("output", {"payload": "line1\nline2"}, 1)
    assert framed.count("\n") == 4  # id, event, data, blank line
    assert "\\n" in framed


def test_comment_and_retry():
    assert sse.comment() == ":\n\n"
    assert sse.comment("keep-alive") == ": keep-alive\n\n"
    assert sse.retry(3000) == "retry: 3000\n\n"


AWKWARD = [
    (3, "stdout", 'say "hi"\n\tthen \\ leave \u00e9\u2028\x00\x1f\x7f', "t"),
    (4, "stderr", "", "t2"),
    (5, "system", "\ufffd \U0001f600 </script>", "2026-12-02T16:49:41.846043Z"),
]


AWKWARD.append((6, "stdout", "lone \ud800 surrogate", "t3"))  # orjson refuses it


@pytest.mark.parametrize("index, stream, payload, created", AWKWARD)
def test_stored_event_json_is_one_compact_line_that_reads_back_to_the_event(
        index, stream, payload, created):
    data = {"event_index": index, "stream": stream, "payload": payload, "created_at": created}
    stored = event_json(index, stream, payload, created)
    assert "\n" not in stored and "\r" not in stored
    assert json.loads(stored) == data
    if payload.isascii():  # non-ASCII stays as it is; ASCII text is what json.dumps writes
        assert stored == json.dumps(data, separators=(",", ":"))


def test_output_events_frame_each_stored_json_as_one_data_line():
    pairs = [(i, event_json(i, stream, payload, created)) for i, stream, payload, created in AWKWARD]
    framed = sse.output_events(pairs)
    events = framed.split("\n\n")[:-1]
    assert len(events) == len(AWKWARD)
    for event, (index, stream, payload, created) in zip(events, AWKWARD):
        event_id, name, data = event.split("\n")
        assert (event_id, name) == (f"id: {index}", "event: output")
        assert json.loads(data[len("data: "):])["payload"] == payload
