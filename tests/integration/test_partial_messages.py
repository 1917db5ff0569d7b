"""`claude -p --include-partial-messages`: the stream_event deltas do not double the text.

The deltas stay in the output buffer (live viewers replay them); the transcript is
built from the complete `assistant` lines that follow them.
"""
import json

import pytest

from tests import claude_lines as cl


def stream_event(event, uuid):
    return json.dumps({"type": "stream_event", "uuid": uuid, "session_id": "claude-session",
                       "parent_tool_use_id": None, "event": event})


def delta(index, kind, field, value, uuid):
    return stream_event({"type": "content_block_delta", "index": index,
                         "delta": {"type": kind, field: value}}, uuid)


def partial_then_whole():
    """One message streamed as deltas (thinking, text, a tool call), then its whole lines."""
    return [
        stream_event({"type": "message_start", "message": {"id": "msg_1", "role": "assistant",
                                                           "content": []}}, "p-01"),
        stream_event({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "thinking", "thinking": ""}}, "p-02"),
        delta(0, "thinking_delta", "thinking", "Let me ", "p-03"),
        delta(0, "thinking_delta", "thinking", "look.", "p-04"),
        stream_event({"type": "content_block_stop", "index": 0}, "p-05"),
        stream_event({"type": "content_block_start", "index": 1,
                      "content_block": {"type": "text", "text": ""}}, "p-06"),
        delta(1, "text_delta", "text", "Listing ", "p-07"),
        delta(1, "text_delta", "text", "the files.", "p-08"),
        stream_event({"type": "content_block_stop", "index": 1}, "p-09"),
        stream_event({"type": "content_block_start", "index": 2, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}, "p-10"),
        delta(2, "input_json_delta", "partial_json", '{"command": ', "p-11"),
        delta(2, "input_json_delta", "partial_json", '"ls"}', "p-12"),
        stream_event({"type": "content_block_stop", "index": 2}, "p-13"),
        stream_event({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, "p-14"),
        stream_event({"type": "message_stop"}, "p-15"),
        cl.assistant(cl.thinking("Let me look."), message_id="msg_1", uuid="w-1"),
        cl.assistant(cl.text("Listing the files."), message_id="msg_1", uuid="w-2"),
        cl.assistant(cl.tool_use("toolu_1", "Bash", {"command": "ls"}), message_id="msg_1",
                     uuid="w-3"),
        cl.tool_result("toolu_1", uuid="w-4"),
        delta(0, "text_delta", "text", "Done", "p-16"),
        delta(0, "text_delta", "text", ".", "p-17"),
        cl.assistant(cl.text("Done."), message_id="msg_2", uuid="w-5"),
        cl.result(uuid="w-6"),
    ]


@pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
def test_deltas_and_the_whole_message_yield_the_text_once(kind, new_session, feed, complete,
                                                          messages, outputs, counts):
    sid = new_session(kind)
    lines = partial_then_whole()
    feed(sid, lines)
    complete(sid)

    rows = messages(sid)
    assert [(m["role"], m["content"]) for m in rows] == [
        ("assistant", "Listing the files.\n\nDone.")]
    types = [b["type"] for b in rows[0]["content_blocks"]]
    result = ["tool_result"] if kind == "autonomous" else []
    assert types == ["thinking", "text", "tool_use", *result, "text"]
    assert rows[0]["content_blocks"][0]["thinking"] == "Let me look."
    assert rows[0]["content_blocks"][2]["input"] == {"command": "ls"}
    assert counts(sid) == (1, 1)
    assert [payload for _, _, payload, _ in outputs(sid)] == lines  # all kept for viewers


def test_deltas_alone_write_nothing(new_session, feed, complete, messages):
    sid = new_session("ordinary")
    feed(sid, [delta(0, "text_delta", "text", "partial", "q-1")])
    complete(sid)
    assert messages(sid) == []
