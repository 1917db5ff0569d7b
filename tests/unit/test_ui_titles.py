"""Session titles: the prompt or first text, with the model and cwd of the init note."""
from app.core.records import Message
from app.ui.titles import SessionTitle
from app.ui.titles import init_fields
from app.ui.titles import one_line
from app.ui.titles import session_title

INIT = "Session started: model=claude-sonnet-4-5, cwd=/work/a, b, tools=4, mcp_servers=1"


def row(id_, role, content):
    return Message(id_, "s", role, content, [], {}, "remote_live", f"k{id_}", "t")


def test_the_first_text_and_the_init_note_make_the_title():
    messages = [row(1, "system", INIT), row(2, "assistant", ""),
                row(3, "assistant", "\n## Plan\nFix **the** pager"), row(4, "assistant", "x")]
    assert session_title({}, messages) == SessionTitle("Plan", "claude-sonnet-4-5", "/work/a, b")


def test_a_prompt_in_the_context_wins_over_the_first_text():
    messages = [row(1, "assistant", "Sure.")]
    assert session_title({"prompt": "  \nRefactor the   CLI\nthen test"}, messages).text == \
        "Refactor the CLI"
    assert session_title({"title": "Nightly"}, messages).text == "Nightly"
    assert session_title({"prompt": 7, "title": " "}, messages).text == "Sure."
    assert session_title(None, messages).text == "Sure."


def test_a_session_that_said_nothing_has_an_empty_title():
    assert session_title({}, []) == SessionTitle("", None, None)
    assert session_title({}, [row(1, "system", "Conversation compacted")]) == \
        SessionTitle("", None, None)


def test_init_notes_of_each_provider_are_read():
    assert init_fields([row(1, "system", "Session started: model=gemini-2.5-pro")]) == {
        "model": "gemini-2.5-pro"}
    assert init_fields([row(1, "system", "Session started: thread=0199")]) == {"thread": "0199"}
    assert init_fields([row(1, "system", "Session started: no details")]) == {}
    assert init_fields([row(1, "assistant", INIT)]) == {}  # only a system row is the note


def test_long_lines_are_cut_with_an_ellipsis():
    line = one_line("word " * 40, limit=20)
    assert len(line) <= 20 and line.endswith("…")
    assert one_line("short") == "short"


def test_markdown_marks_are_dropped_but_names_and_markup_stay():
    assert one_line("> **Note:** read `file_path` <b>") == "Note: read file_path <b>"
    assert one_line("- a *b* c") == "a *b* c"


def test_the_recorded_first_prompt_wins_over_the_context_and_the_first_text():
    messages = [row(1, "assistant", "Sure, I will look.")]
    title = session_title({"prompt": "from the context"}, messages,
                          prompt="\n  Fix the **pager** test\nand more", command=["claude", "-p"])
    assert title.text == "Fix the pager test"
    long = session_title({}, messages, prompt="word " * 100).text
    assert len(long) == 90 and long.endswith("…")


def test_without_a_prompt_the_previous_rule_holds():
    messages = [row(1, "assistant", "Sure, I will look.")]
    assert session_title({"title": "Nightly"}, messages, prompt=None, command=["x"]).text == "Nightly"
    assert session_title({}, messages, prompt="  ", command=["x"]).text == "Sure, I will look."


def test_a_session_with_no_text_is_titled_by_its_command():
    title = session_title({}, [], command=["/usr/bin/python3", "job.py", "--since", "a day"])
    assert title.text == "python3 job.py --since 'a day'"
    assert session_title({}, [], command=[]).text == ""
    assert session_title({}, [], command=None).text == ""
