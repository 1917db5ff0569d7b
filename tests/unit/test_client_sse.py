"""app.client.sse: the SSE framing a browser's EventSource applies."""
import pytest

from app.client.sse import Event
from app.client.sse import SseParser


def test_events_dispatch_at_the_blank_line_with_their_type_id_and_data():
    parser = SseParser()
    assert parser.feed("retry: 3000\n\nid: 41\nevent: output\ndata: {\"a\":1}\n") == []
    assert parser.feed("\n") == [Event("output", '{"a":1}', "41")]
    assert parser.retry_ms == 3000


def test_data_lines_join_with_newlines_and_the_type_defaults_to_message():
    assert SseParser().feed("data: one\ndata:two\ndata\n\n") == [Event("message", "one\ntwo\n", None)]


def test_comments_and_blocks_without_data_dispatch_nothing_but_keep_the_id():
    parser = SseParser()
    assert parser.feed(": keep-alive\n\nid: 7\n\n") == []
    assert parser.last_id == "7"
    assert parser.feed("data: x\n\n") == [Event("message", "x", "7")]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_every_line_ending_frames_the_same_events(ending):
    # A CR that ends what has arrived may be half a CRLF: the next text settles it.
    text = ending.join(["id: 1", "event: end", "data: {}", "", ": next"])
    assert SseParser().feed(text) == [Event("end", "{}", "1")]


def test_a_cr_at_the_end_of_a_chunk_waits_for_the_next_one():
    parser = SseParser()
    assert parser.feed("data: a\r\r") == []
    assert parser.feed("\n") == [Event("message", "a", None)]


def test_text_split_anywhere_gives_the_same_events_as_whole():
    text = "id: 2.1\r\nevent: block.delta\r\ndata: {\"text\":\"h\u00e9\"}\r\n\r\nid: 3\ndata: y\n\n"
    whole = SseParser().feed(text)
    for cut in range(len(text)):
        parser = SseParser()
        assert parser.feed(text[:cut]) + parser.feed(text[cut:]) == whole
    assert [event.id for event in whole] == ["2.1", "3"]


def test_an_id_with_a_nul_is_ignored_and_a_non_numeric_retry_too():
    parser = SseParser()
    parser.feed("id: 5\n\nid: a\0b\nretry: soon\ndata: z\n\n")
    assert parser.last_id == "5"
    assert parser.retry_ms is None
