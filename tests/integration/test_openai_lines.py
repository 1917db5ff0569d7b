"""OpenAI-style `{"type": "message", "role": "assistant"}` lines make the same rows."""
import json

import pytest

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


def message(content, **extra):
    return json.dumps({"type": "message", "role": "assistant", "content": content, **extra})


@BOTH_KINDS
@pytest.mark.parametrize("content", [
    "Plain string reply.",
    [{"type": "output_text", "text": "Plain string reply."}],
    [{"type": "text", "text": "Plain string reply."}],
])
def test_openai_message_is_one_assistant_row(kind, content, new_session, feed, complete,
                                             messages, counts):
    sid = new_session(kind)
    feed(sid, [message(content)])
    complete(sid)

    [row] = messages(sid)
    assert (row["role"], row["content"], row["source"]) == (
        "assistant", "Plain string reply.", "remote_live")
    assert row["content_blocks"] == [{"type": "text", "text": "Plain string reply."}]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_openai_tool_calls_become_tool_use_blocks(kind, new_session, feed, complete, messages):
    sid = new_session(kind)
    call = {"id": "call_1", "type": "function",
            "function": {"name": "shell", "arguments": "{\"cmd\": \"ls\"}"}}
    feed(sid, [message("Running ls.", tool_calls=[call])])
    complete(sid)

    [row] = messages(sid)
    assert row["content"] == "Running ls."
    expected = [{"type": "text", "text": "Running ls."},
                {"type": "tool_use", "id": "call_1", "name": "shell", "input": {"cmd": "ls"}}]
    assert row["content_blocks"] == row["metadata"]["content_blocks"] == expected


@pytest.mark.parametrize("kind, expected", [("ordinary", []), ("autonomous", [""])])
def test_openai_tool_calls_only(kind, expected, new_session, feed, complete, messages, counts):
    sid = new_session(kind)
    call = {"id": "call_2", "function": {"name": "shell", "arguments": "{}"}}
    feed(sid, [message(None, tool_calls=[call])])
    complete(sid)

    assert [m["content"] for m in messages(sid)] == expected
    assert counts(sid) == (len(expected), len(expected))


def test_openai_user_message_is_not_a_row(new_session, feed, complete, messages, outputs):
    sid = new_session("ordinary")
    feed(sid, [json.dumps({"type": "message", "role": "user", "content": "hi"})])
    complete(sid)

    assert messages(sid) == []
    assert len(outputs(sid)) == 1
