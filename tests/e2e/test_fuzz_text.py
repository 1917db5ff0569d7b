"""Property-based hostile text for every parser of agent text (hypothesis).

Each text path (test summaries, Markdown, titles, search snippets, tool-text
flattening, each provider's line parser) is fed runs of the characters that make
patterns backtrack (blanks, newlines, backticks, `*`, `_`, `[`, `(`, digits, long
words, summary words) and deeply nested JSON, up to 2 MiB, and must answer within a
time proportional to the input. The bound is loose (SECONDS_PER_MIB, several times
the bench's figures, for a loaded machine); a super-linear path would take minutes
at 2 MiB. Seeded and bounded: a few seconds per path.
"""
import json
import time

import pytest

from tests.extras import require

require("hypothesis")

from hypothesis import HealthCheck  # noqa: E402
from hypothesis import example  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from app.core.records import Message  # noqa: E402
from app.formats.tool_text import tool_result_text  # noqa: E402
from app.providers import REGISTRY  # noqa: E402
from app.services.search import head_snippet  # noqa: E402
from app.transcript.test_summaries import summarize  # noqa: E402
from app.ui.markdown import render  # noqa: E402
from app.ui.titles import init_fields  # noqa: E402
from app.ui.titles import one_line  # noqa: E402

MIB = 1 << 20
SECONDS_PER_MIB = 3.0
SLACK_SECONDS = 0.25
SIZES = [1024, 64 * 1024, 512 * 1024, 2 * MIB]
PIECES = ["\n", " ", "\t", " \n", "`", "``", "```", "*", "**", "_", "__", "[", "]", "(", ")",
          "a", "word", "1", "0.2", "=", ", ", "#", "- ", "|", "https://x.org", "](", "passed",
          " in 0.2s", "Ran 1 test", "Tests:", "Tests  ", "ok ", "--- PASS: ", "total", "=== RUN ",
          "test result: ok. ", "\x1b[31m", "model=", "\\u0000", '{"a":', "[1,"]
FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

units = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)
hostile_texts = st.builds(
    lambda head, unit, size, tail: head + unit * max(1, size // len(unit)) + tail,
    st.sampled_from(["", "1 passed in 0.2s\n", "Ran 1 test in 0.1s\n", "# ", "**", "`"]),
    units, st.sampled_from(SIZES), st.sampled_from(["", "a", "\n", "`", "**", "]"]))


def _nested(opener, closer, depth, middle):
    return opener * depth + middle + closer * depth


provider_lines = st.one_of(
    hostile_texts,
    st.builds(lambda depth, size: _nested("[", "]", depth, "1," * (size // 2) + "1"),
              st.integers(1, 2000), st.sampled_from(SIZES)),
    st.builds(lambda depth, kind: '{"type":"%s","x":' % kind + _nested('{"a":', "}", depth, "1") + "}",
              st.integers(1, 200_000), st.sampled_from(["assistant", "user", "item.completed",
                                                        "message", "result"])),
    st.builds(lambda text, kind: json.dumps({"type": kind, "message": {"content": [
        {"type": "text", "text": text}, {"type": "tool_result", "content": text}]}}),
        hostile_texts, st.sampled_from(["assistant", "user"])),
)


def within_bound(function, value, size):
    began = time.perf_counter()
    function(value)
    elapsed = time.perf_counter() - began
    assert elapsed < SECONDS_PER_MIB * size / MIB + SLACK_SECONDS, (elapsed, size, repr(value[:80]))


def _title(text):
    note = Message(1, "sid", "system", "Session started: " + text, [], {}, "live", "k",
                   "2026-12-02T16:49:41Z")
    return init_fields([note]), one_line(text)


def _tool_text(text):
    return tool_result_text([{"type": "text", "text": text}, {"value": text}, text])


TEXT_PATHS = {
    "test summaries": summarize,
    "markdown": render,
    "markdown past its bound": lambda text: render(text, max_chars=None),  # rendered all the same
    "titles": _title,
    "search snippets": lambda text: head_snippet(text, ["a", "passed", "word"]),
    "tool text": _tool_text,
}


@pytest.mark.parametrize("path", sorted(TEXT_PATHS))
@FUZZ
@given(text=hostile_texts)
@example(text="1 passed in 0.2s\n" + "\n" * 2 * MIB)  # the attacks, at 2 MiB
@example(text="a" + "`" * 2 * MIB + "a")
@example(text="*" + " *a" * (2 * MIB // 3))
@example(text="[a" * MIB)
@example(text="a" * 2 * MIB)
@example(text="Tests:" + " " * 2 * MIB)
def test_each_text_path_is_linear_on_hostile_text(path, text):
    within_bound(TEXT_PATHS[path], text, len(text))


@pytest.mark.parametrize("provider", sorted(REGISTRY))
@FUZZ
@given(line=provider_lines)
def test_each_provider_parser_is_linear_on_hostile_lines(provider, line):
    within_bound(REGISTRY[provider], line, len(line))


@FUZZ
@given(depth=st.integers(1, 199), width=st.sampled_from(SIZES))
def test_deep_tool_results_are_flattened_in_linear_time(depth, width):
    value = json.loads(_nested("[", "]", depth, "1," * (width // 2) + "1"))
    within_bound(tool_result_text, {"value": value}, width)
