"""The session header's figures (app/ui/figures.py)."""
from app.ui.figures import cost_text


def test_a_reported_cost_is_shown_to_a_hundredth_of_a_cent():
    assert cost_text(0.01234) == "$0.0123"


def test_no_reported_cost_is_not_shown_as_free():
    assert cost_text(0) == "n/a"
    assert cost_text(0.0) == "n/a"
