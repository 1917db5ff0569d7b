"""The snippet the service makes from the first characters of a row too long for the
database's own snippet function."""
from app.services.search import SNIPPET_WORDS
from app.services.search import head_snippet


def test_marks_every_match_in_a_window_around_the_first():
    head = " ".join(f"w{i}" for i in range(100)) + " Needles, needle needled w200 " + "tail " * 50
    snippet = head_snippet(head, ["needle"])
    assert snippet.startswith("…w94 w95")
    assert "**Needles,** **needle** **needled**" in snippet
    assert snippet.endswith("…")
    assert len(snippet.strip("…").split()) == SNIPPET_WORDS


def test_no_match_in_the_head_shows_its_first_words():
    head = " ".join(["hay"] * 100)
    assert head_snippet(head, ["needle"]) == " ".join(["hay"] * SNIPPET_WORDS) + "…"


def test_a_short_head_is_shown_whole_without_ellipses():
    assert head_snippet("the migration failed", ["migrations"]) == "the **migration** failed"


def test_words_inside_punctuation_match_but_not_inside_other_words():
    assert head_snippet("(needle) haystack-needle needlework", ["needle"]) == (
        "**(needle)** **haystack-needle** needlework")


def test_endings_are_dropped_on_both_sides():
    assert head_snippet("he runs, was running, ran", ["run"]) == "he **runs,** was **running,** ran"
