"""A turn with visible text is one assistant row, whatever the session kind."""
import pytest

from tests import claude_lines as cl

BOTH_KINDS = pytest.mark.parametrize("kind", ["ordinary", "autonomous"])


@BOTH_KINDS
def test_text_turn_is_one_assistant_row(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    receipt = feed(sid, [cl.assistant(cl.text("Hello there.")), cl.result()])

    [row] = messages(sid)
    assert (row["role"], row["content"]) == ("assistant", "Hello there.")
    assert row["source"] == "remote_live"
    assert row["content_blocks"] == [cl.text("Hello there.")] == row["metadata"]["content_blocks"]
    assert row["metadata"]["trigger"] == "result"
    assert row["metadata"]["result"] == {"subtype": "success", "is_error": False, "num_turns": 1,
                                         "duration_ms": 10, "usage": cl.RESULT_USAGE}
    assert row["metadata"]["usage"] == cl.RESULT_USAGE  # the result's own total
    assert receipt.messages_written == 1
    assert counts(sid) == (1, 1)


@pytest.mark.parametrize("kind", ["chat", "terminal", "workflow_without_id"])
def test_other_ordinary_types_write_the_text_row_too(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Hi.")), cl.result()])

    assert [(m["role"], m["content"]) for m in messages(sid)] == [("assistant", "Hi.")]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_text_and_tool_use_keep_the_blocks_in_column_and_metadata(kind, new_session, feed,
                                                                  messages, counts):
    sid = new_session(kind)
    use = cl.tool_use("toolu_7", "Read", {"file_path": "a.py"})
    feed(sid, [cl.assistant(cl.text("Reading a.py."), use), cl.result()])

    [row] = messages(sid)
    assert row["content"] == "Reading a.py."
    assert row["content_blocks"] == [cl.text("Reading a.py."), use]
    assert row["metadata"]["content_blocks"] == [cl.text("Reading a.py."), use]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_lines_of_one_message_id_make_one_row(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    think, use = cl.thinking("Which file?"), cl.tool_use("toolu_3")
    feed(sid, [
        cl.assistant(think, message_id="msg_shared", uuid="line-1"),
        cl.assistant(cl.text("Listing files."), message_id="msg_shared", uuid="line-2"),
        cl.assistant(use, message_id="msg_shared", uuid="line-3"),
        cl.result(),
    ])

    [row] = messages(sid)
    assert row["content"] == "Listing files."
    assert row["content_blocks"] == [think, cl.text("Listing files."), use]
    assert row["metadata"]["message_ids"] == ["msg_shared"]
    assert row["metadata"]["event_range"] == [0, 3]
    assert counts(sid) == (1, 1)


@BOTH_KINDS
def test_texts_of_one_turn_join_as_paragraphs(kind, new_session, feed, messages):
    sid = new_session(kind)
    feed(sid, [
        cl.assistant(cl.text("First."), message_id="msg_a"),
        cl.assistant(cl.text("Second."), message_id="msg_b"),
        cl.result(),
    ])

    [row] = messages(sid)
    assert row["content"] == "First.\n\nSecond."
    assert row["metadata"]["message_ids"] == ["msg_a", "msg_b"]


@BOTH_KINDS
def test_two_identical_turns_are_two_rows(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Done."), uuid="first"), cl.result(uuid="r-first")])
    feed(sid, [cl.assistant(cl.text("Done."), uuid="second"), cl.result(uuid="r-second")])

    stored = messages(sid)
    assert [m["content"] for m in stored] == ["Done.", "Done."]
    assert stored[0]["turn_key"] != stored[1]["turn_key"]
    assert counts(sid) == (2, 2)


@BOTH_KINDS
def test_a_turn_split_across_requests_is_one_row(kind, new_session, feed, messages, counts):
    sid = new_session(kind)
    first = feed(sid, [cl.assistant(cl.text("Part one."))])
    assert first.messages_written == 0 and messages(sid) == []

    feed(sid, [cl.assistant(cl.text("Part two.")), cl.result()])

    assert [m["content"] for m in messages(sid)] == ["Part one.\n\nPart two."]
    assert counts(sid) == (1, 1)
