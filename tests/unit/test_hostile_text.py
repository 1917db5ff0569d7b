"""The attacks of issue 29 on each parser of agent text, as fixed cases.

Each took seconds to hours before (quadratic or cubic); each must now answer the
same as on a harmless text of its kind, well inside a loose bound (the real figures
are bench/hostile_text.py's).
"""
import json
import time

import pytest

from app.core.records import Message
from app.formats.tool_text import INDENTED_DEPTH
from app.formats.tool_text import tool_result_text
from app.transcript.test_summaries import SUMMARY_TAIL_CHARS
from app.transcript.test_summaries import summarize
from app.ui.markdown import inline
from app.ui.markdown import render
from app.ui.titles import init_fields
from app.ui.titles import one_line

LOOSE_SECONDS = 1.0  # each case below takes milliseconds now


def timed(function, *args):
    began = time.perf_counter()
    value = function(*args)
    assert time.perf_counter() - began < LOOSE_SECONDS
    return value


def test_a_summary_followed_by_60000_newlines_is_read_at_once():
    found = timed(summarize, "1 passed in 0.2s\n" + 60000 * "\n")
    assert (found["framework"], found["passed"]) == ("pytest", 1)


@pytest.mark.parametrize("text", [
    "\n" * 300_000, " \n" * 150_000, "=" * 300_000 + "\n", "Ran 1 test in 0.1s\n" + "\n" * 300_000,
    "Tests:" + " " * 300_000, "1 passed, " * 30_000, "ok " + " " * 300_000 + "x", "1" * 300_000,
])
def test_runs_that_made_a_reader_backtrack_are_no_summary(text):
    assert timed(summarize, text) is None


def test_only_the_tail_of_a_long_output_is_read():
    early = "3 passed in 0.1s\n" + "log line\n" * (SUMMARY_TAIL_CHARS // 9 + 1)
    assert summarize(early) is None  # its summary lies before the tail
    assert summarize(early + "1 failed in 0.1s\n")["failed"] == 1


def test_a_16_kb_backtick_message_renders_at_once():
    html = str(timed(render, "a" + "`" * 16000 + "a"))
    assert html == "<p>a" + "`" * 16000 + "a</p>"


@pytest.mark.parametrize("text", [
    "`a" + "``" * 100_000, "*" + " *a" * 100_000, "_a " * 100_000, "[a" * 100_000,
    "[a](" * 100_000, "**a " * 100_000, "# a" + " #" * 100_000, "".join("`" * n + "a" for n in range(700)),
])
def test_runs_of_markdown_marks_render_at_once(text):
    # Rendered as Markdown, past RENDER_MAX_CHARS too: the renderer itself is linear.
    assert str(timed(render, text, None)).startswith(("<p>", "<h1>", "<ul>"))


def test_a_code_span_closes_at_the_next_run_of_its_length():
    assert str(inline("``a ` b`` c")) == "<code>a ` b</code> c"
    assert str(inline("```a`")) == "```a`"  # no run of three closes it: text


def test_a_long_word_in_the_init_note_is_read_at_once():
    note = Message(1, "sid", "system", "Session started: " + "a" * 300_000, [], {}, "live", "k",
                   "2026-12-02T16:49:41Z")
    assert timed(init_fields, [note]) == {}
    note = Message(1, "sid", "system", "Session started: model=m, cwd=" + "a=" * 150_000, [], {},
                   "live", "k", "2026-12-02T16:49:41Z")
    assert timed(init_fields, [note])["model"] == "m"


def test_a_title_is_looked_for_near_the_start_only():
    assert timed(one_line, "\n" * 300_000 + "Title") == "Title"
    assert timed(one_line, "- \n" * 100_000 + "Title") == ""  # marks alone, then too far


def test_a_deep_tool_result_is_flattened_on_one_line():
    deep = {"value": json.loads("[" * 150 + "1," * 1000 + "1" + "]" * 150)}
    text = timed(tool_result_text, deep)
    assert text == json.dumps(deep, ensure_ascii=False)
    shallow = {"value": json.loads("[" * (INDENTED_DEPTH - 1) + "1" + "]" * (INDENTED_DEPTH - 1))}
    assert tool_result_text(shallow) == json.dumps(shallow, indent=2)  # indented as before
