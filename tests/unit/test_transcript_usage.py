"""A turn's usage and what it adds to the session's transcript usage."""
import math

from app.transcript.usage import reported_usage
from app.transcript.usage import transcript_delta
from app.transcript.usage import turn_usage


class Turn:
    def __init__(self, usage, result=None):
        self.usage, self.result = usage, result or {}


def test_the_results_report_wins_over_the_fold():
    fold = {"m1": {"input_tokens": 3, "output_tokens": 18}}
    assert turn_usage({"usage": {"input_tokens": 3, "output_tokens": 99}}, fold)["output_tokens"] == 99
    assert turn_usage({}, fold) == {"input_tokens": 3, "output_tokens": 18}


def test_reported_usage_keeps_whole_token_counts_only():
    assert reported_usage({"stats": {"input_tokens": 5, "total_tokens": 7, "duration_ms": 9,
                                     "output_tokens": True, "cached_tokens": -1}}) == {
        "input_tokens": 5, "total_tokens": 7}
    assert reported_usage({"usage": "lots"}) == {}


def test_the_delta_sums_tokens_under_claudes_names_and_the_cost():
    turns = [Turn({"input_tokens": 18, "output_tokens": 85, "cache_read_input_tokens": 8800,
                   "cache_creation_input_tokens": 800},
                  {"total_cost_usd": 0.05, "cost_usd": 0.021}),
             Turn({"input_tokens": 9000, "cached_input_tokens": 8800, "output_tokens": 30}),
             Turn({"total_tokens": 50, "output_tokens": 7}, {"cost_usd": math.nan})]
    delta = transcript_delta(turns)
    # Codex's 9000 input include its 8800 cached: 200 uncached, the 8800 as cache read;
    # the cost is the turn's own (`cost_usd`), not the running cost Claude reports
    assert delta == {"input_tokens": 218, "output_tokens": 122, "cache_read_input_tokens": 17600,
                     "cache_creation_input_tokens": 800, "total_cost_usd": 0.021}


def test_no_turns_add_nothing():
    assert not any(transcript_delta([]).values())


def test_gemini_stats_keep_their_cached_part_as_cache_read():
    stats = {"stats": {"total_tokens": 900, "input_tokens": 820, "output_tokens": 80,
                       "cached": 400, "input": 420, "duration_ms": 2100}}
    usage = reported_usage(stats)
    assert usage == {"total_tokens": 900, "input_tokens": 820, "output_tokens": 80,
                     "cached_input_tokens": 400}
    delta = transcript_delta([Turn(usage)])
    assert (delta["input_tokens"], delta["cache_read_input_tokens"]) == (420, 400)
    assert delta["input_tokens"] + delta["cache_read_input_tokens"] == stats["stats"]["input_tokens"]


def test_cached_input_beyond_the_input_reported_leaves_no_negative_input():
    delta = transcript_delta([Turn({"input_tokens": 5, "cached_input_tokens": 9})])
    assert (delta["input_tokens"], delta["cache_read_input_tokens"]) == (0, 9)
