"""Messages as bubbles: one part per block kind, and never an empty bubble."""
from app.core.records import Message
from app.ui.transcript import anchor
from app.ui.transcript import bubbles
from app.ui.transcript import open_turn_bubble
from app.ui.transcript import thinking_view


def message(id_, content="", blocks=(), role="assistant"):
    return Message(id_, "sid", role, content, list(blocks), {}, "remote_live", f"k{id_}",
                   "2026-12-02T16:49:41.846043Z")


def kinds(bubble):
    return [part["kind"] for part in bubble.parts]


def test_each_block_kind_becomes_its_part():
    [bubble] = bubbles([message(1, "Done.", [
        {"type": "thinking", "thinking": "hmm", "signature": "x"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "why"}]},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la"}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb", "is_error": True},
        {"type": "image", "source": {}},
    ])])
    assert str(bubble.html) == "<p>Done.</p>"
    assert kinds(bubble) == ["thinking", "thinking", "redacted_thinking", "tool_use", "other"]
    thinking, reasoning, _, use, other = bubble.parts
    [result] = use["results"]  # nested under the call it answers
    assert (thinking["label"], thinking["text"]) == ("Thinking", "hmm")
    assert (reasoning["label"], reasoning["text"]) == ("Reasoning", "why")
    assert use["name"] == "Bash" and use["preview"] == "ls -la"
    assert use["input_json"] == '{\n  "command": "ls -la"\n}'
    assert result["anchor"] == use["anchor"] == "tool-1-toolu_1"
    assert result["tool_name"] == "Bash" and result["is_error"] and result["text"] == "a\nb"
    assert other["type"] == "image"


def test_rows_with_nothing_to_show_make_no_bubble():
    shown = bubbles([
        message(1, ""),
        message(2, "   \n"),
        message(3, "", [{"type": "thinking", "thinking": " "}, {"type": "text", "text": ""}]),
        message(4, "", [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]),
        message(5, "plain system text", role="system"),
    ])
    assert [b.id for b in shown] == [4, 5]
    assert str(shown[1].html) == "<p>plain system text</p>"


def test_tool_result_content_lists_are_flattened_to_text():
    [bubble] = bubbles([message(1, "", [{"type": "tool_result", "tool_use_id": "t9", "content": [
        {"type": "text", "text": "first"}, {"type": "image", "data": "..."}]}])])
    [result] = bubble.parts
    assert result["text"].startswith("first\n{")
    assert result["tool_name"] is None and result["tool_id"] == "t9"


def test_anchor_is_a_safe_html_id():
    assert anchor(7, 'a"b <c>') == "tool-7-a_b__c_"


def test_reused_tool_ids_are_named_and_anchored_within_their_own_message():
    def message(id_, name):
        blocks = [{"type": "tool_use", "id": "item_0", "name": name, "input": {}},
                  {"type": "tool_result", "tool_use_id": "item_0", "content": "ok"}]
        return Message(id_, "s", "assistant", "", blocks, {}, "remote_live", f"k{id_}", "t")

    first, second = bubbles([message(1, "command_execution"), message(2, "file_change")])
    assert first.parts[0]["results"][0]["tool_name"] == "command_execution"
    assert second.parts[0]["results"][0]["tool_name"] == "file_change"
    assert first.parts[0]["anchor"] != second.parts[0]["anchor"]


def test_a_row_with_text_blocks_shows_its_blocks_in_arrival_order():
    [bubble] = bubbles([message(1, "Looking.\n\nFound it.", [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_result", "tool_use_id": "t2", "content": "two"},
        {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
        {"type": "text", "text": "Found it."},
    ])])
    assert bubble.html == ""  # the content text is not shown twice
    assert kinds(bubble) == ["text", "tool_use", "tool_use", "text"]
    assert [str(p["html"]) for p in bubble.parts if p["kind"] == "text"] == [
        "<p>Looking.</p>", "<p>Found it.</p>"]
    read, bash = bubble.parts[1], bubble.parts[2]
    assert [r["text"] for r in read["results"]] == ["one"]
    assert [r["text"] for r in bash["results"]] == ["two"]


def test_an_older_row_shows_its_content_first_then_its_blocks():
    [bubble] = bubbles([message(1, "Done.", [
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}])])
    assert str(bubble.html) == "<p>Done.</p>" and kinds(bubble) == ["tool_use"]


def test_a_result_whose_call_is_in_another_row_keeps_its_place():
    [bubble] = bubbles([message(1, "", [
        {"type": "tool_result", "tool_use_id": "earlier", "content": "late"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}])])
    assert kinds(bubble) == ["tool_result", "tool_use"]
    assert bubble.parts[0]["text"] == "late" and bubble.parts[1]["results"][0]["text"] == "ok"


def test_the_open_turn_is_a_provisional_bubble_in_arrival_order():
    bubble = open_turn_bubble({"turn_id": "turn:x", "started_at": "2026-12-02T16:49:41Z",
                               "visible_text": "Looking <b>.", "content_blocks": [
        {"type": "text", "text": "Looking <b>.", "block_id": "b0"},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"},
         "block_id": "b1"},
        {"type": "tool_result", "tool_use_id": "t1", "content": "a", "block_id": "b2"},
        {"type": "text", "text": " "}]})
    assert (bubble.turn_id, bubble.timestamp) == ("turn:x", "2026-12-02T16:49:41Z")
    assert kinds(bubble) == ["text", "tool_use"]
    text, use = bubble.parts
    # rendered as the row will be (the open turn holds whole blocks only)
    assert (str(text["html"]), text["block_id"]) == ("<p>Looking &lt;b&gt;.</p>", "b0")
    assert use["block_id"] == "b1" and use["results"][0]["block_id"] == "b2"
    assert use["anchor"] == "tool-open-t1"


def test_no_open_turn_or_one_with_nothing_to_show_makes_no_bubble():
    assert open_turn_bubble(None) is None
    assert open_turn_bubble({"turn_id": "t", "content_blocks": []}) is None
    assert open_turn_bubble({"turn_id": "t", "content_blocks": "junk"}) is None


def test_a_sub_agents_blocks_sit_inside_the_task_call_that_started_it():
    sub = {"parent_tool_use_id": "toolu_T"}
    [bubble] = bubbles([message(1, "", [
        {"type": "text", "text": "Delegating."},
        {"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"description": "Find it"}},
        {"type": "tool_use", "id": "toolu_S", "name": "Grep", "input": {"pattern": "x"}, **sub},
        {"type": "tool_result", "tool_use_id": "toolu_S", "content": "a.py:1", **sub},
        {"type": "text", "text": "Found in a.py.", **sub},
        {"type": "tool_result", "tool_use_id": "toolu_T", "content": "Found in a.py."},
        {"type": "text", "text": "Done."},
        {"type": "text", "text": "Orphan.", "parent_tool_use_id": "toolu_elsewhere"}])])
    assert kinds(bubble) == ["text", "tool_use", "text", "text"]
    task = bubble.parts[1]
    assert [c["kind"] for c in task["children"]] == ["tool_use", "text"]
    assert task["children"][0]["results"][0]["text"] == "a.py:1"  # the sub-agent's own result
    assert [r["text"] for r in task["results"]] == ["Found in a.py."]
    assert "Orphan." in bubble.parts[3]["html"]  # its Task is not in this row: it keeps its place


def _call(tool_id, parent=None):
    block = {"type": "tool_use", "id": tool_id, "name": "Task", "input": {}}
    return {**block, "parent_tool_use_id": parent} if parent else block


def _depths(parts, depth=0):
    """tool id -> how deep it is shown, walking the tree without recursion."""
    found, stack = {}, [(part, depth) for part in parts]
    while stack:
        part, level = stack.pop()
        found[part["tool_id"]] = level
        stack.extend((child, level + 1) for child in part["children"])
    return found


def test_a_deep_sub_agent_chain_is_shown_flat_at_the_depth_cap():
    from app.ui.transcript import MAX_SUBAGENT_DEPTH
    chain = [_call("t0")] + [_call(f"t{i}", f"t{i - 1}") for i in range(1, 300)]
    [bubble] = bubbles([message(1, blocks=chain)])
    depths = _depths(bubble.parts)
    assert len(depths) == 300  # every call is shown
    assert [depths[f"t{i}"] for i in range(MAX_SUBAGENT_DEPTH + 1)] == list(range(MAX_SUBAGENT_DEPTH + 1))
    assert {depths[f"t{i}"] for i in range(MAX_SUBAGENT_DEPTH, 300)} == {MAX_SUBAGENT_DEPTH}


def test_calls_whose_parents_loop_are_shown_at_the_top():
    blocks = [_call("a", "b"), _call("b", "a"), _call("self", "self"), _call("child", "a"),
              {"type": "tool_result", "tool_use_id": "b", "content": "done"}]
    [bubble] = bubbles([message(1, blocks=blocks)])
    assert [part["tool_id"] for part in bubble.parts] == ["a", "b", "self"]
    assert [child["tool_id"] for child in bubble.parts[0]["children"]] == ["child"]
    assert bubble.parts[1]["results"][0]["text"] == "done"


def test_a_prompt_row_carries_the_uuid_of_the_input_it_applied():
    prompt = Message(1, "sid", "user", "say hi", [], {"uuid": "u-1", "event_index": 3},
                     "remote_live", "user:u-1", "t")
    echo_of_assistant = Message(2, "sid", "assistant", "hi", [], {"uuid": "x"}, "remote_live",
                                "k2", "t")
    first, second = bubbles([prompt, echo_of_assistant])
    assert (first.input_uuid, second.input_uuid) == ("u-1", None)


def stored(tool_id, output="ok\n", *, message_id=None, after=0, name="Bash", is_error=False,
           turn_id="turn:t", **extra):
    from app.core.records import ToolResult
    return ToolResult(1, "sid", turn_id, tool_id, name, {"command": "ls"}, True, is_error,
                      output, len(output.encode()), False, message_id, after,
                      "2026-12-02T16:49:42Z", **extra)


def test_a_stored_result_is_shown_under_its_call_in_an_ordinary_row():
    from app.core.records import PageTools
    row = message(5, "", [{"type": "text", "text": "Listing."},
                          {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}])
    [bubble] = bubbles([row], PageTools({5: [stored("toolu_1", "a\nb\nc\n", message_id=5, after=5)]}, []))
    _, use = bubble.parts
    [result] = use["results"]
    assert (result["text"], result["tool_name"], result["open"]) == ("a\nb\nc\n", "Bash", False)
    assert (result["head"], result["tail"]) == ("a", "c")  # the collapsed result's preview


def test_a_row_holding_its_results_shows_each_once_and_a_failure_starts_open():
    from app.core.records import PageTools
    row = message(5, "", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}},
                          {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom",
                           "is_error": True}])
    [bubble] = bubbles([row], PageTools({5: [stored("toolu_1", "boom", message_id=5, after=5,
                                                    is_error=True)]}, []))
    [use] = bubble.parts
    [result] = use["results"]
    assert result["open"] and result["is_error"]


def test_a_tool_only_turn_is_a_block_in_its_place_between_the_bubbles():
    from app.core.records import PageTools
    from app.core.records import ToolTurn
    read = stored("toolu_r", "# demo\n", name="Read", after=5, turn_id="turn:abc")
    cut = stored("toolu_x", "", after=7, turn_id="turn:def", output_omitted=True)
    shown = bubbles([message(5, "One."), message(7, "Two.")],
                    PageTools({}, [ToolTurn("turn:abc", 5, "2026-12-02T16:49:42Z", [read]),
                                   ToolTurn("turn:def", 7, "2026-12-02T16:49:43Z", [cut])]))
    assert [b.kind for b in shown] == ["message", "tool_turn", "message", "tool_turn"]
    block = shown[1]
    assert block.dom_id == "turn-turn_abc"
    [use] = block.parts
    assert (use["name"], use["preview"], use["anchor"]) == ("Read", "ls", "tool-turn-turn_abc-toolu_r")
    assert use["results"][0]["text"] == "# demo\n"
    assert "not shown on this page" in shown[3].parts[0]["results"][0]["note"]


def test_a_reasoning_summarys_bold_first_line_is_its_title_and_the_rest_markdown():
    title, html = thinking_view("**Running the Rust tests**\n\nThen `cargo test` **again**.")
    assert title == "Running the Rust tests"
    assert str(html) == "<p>Then <code>cargo test</code> <strong>again</strong>.</p>"
    assert thinking_view("  **Only a title**  ") == ("Only a title", "")


def test_a_thinking_text_without_a_bold_first_line_is_markdown_with_no_title():
    assert thinking_view("Weighing **options**") == ("", "<p>Weighing <strong>options</strong></p>")
    assert thinking_view("**Bold** then more")[0] == ""  # not a line of its own
    assert thinking_view("** **\nbody")[0] == ""
    title, html = thinking_view("**<b>x</b>**\n<script>1</script>")
    assert title == "<b>x</b>"  # text: the template escapes it
    assert "<script>" not in str(html) and "&lt;script&gt;" in str(html)


def test_a_long_unclosed_bold_first_line_is_read_in_linear_time():
    import time
    started = time.perf_counter()
    assert thinking_view("**" + "a " * 200_000)[0] == ""
    assert time.perf_counter() - started < 1


def test_reasoning_parts_carry_their_title_and_rendered_body():
    [bubble] = bubbles([message(1, "", [
        {"type": "reasoning", "text": "**Inspecting the repo**\nLooking at *src*."}])])
    [part] = bubble.parts
    assert (part["label"], part["title"]) == ("Reasoning", "Inspecting the repo")
    assert str(part["html"]) == "<p>Looking at <em>src</em>.</p>"
