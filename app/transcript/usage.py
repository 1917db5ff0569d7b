"""A turn's token usage, and what it adds to the session's `transcript_usage`. Pure.

A turn's own result line is the agent's total for it (Claude's `result.usage`, the
step of Codex's running total at `turn.completed` (`ThreadUsage`, app/core/thread_usage.py), Gemini's
`stats`), so it wins; without one, the per-message fold of the turn's lines stands in
(`token_totals`).

Two conventions meet here. Claude's `input_tokens` leave out the cache reads and
writes (`cache_read_input_tokens`, `cache_creation_input_tokens` come on top). Codex's
and Gemini's `input_tokens` are all the input, and the part read from the cache is a
part of it (Codex `cached_input_tokens`, Gemini `stats.cached`, kept under Codex's
name). The session's sums take Claude's names and meaning, so input is counted once:
cached input goes to cache read, and out of input.
"""

# The session-level sums, by the names Claude's API uses.
TRANSCRIPT_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens")
# The part of `input_tokens` read from the cache (OpenAI's and Gemini's convention).
CACHED_PART = "cached_input_tokens"
# Gemini's stats name their counts so; `cached` is the cached part of input_tokens.
STATS_ALIASES = {"cached": CACHED_PART}
# Claude's result reports the agent session's running cost so far; the accumulator
# steps it into the turn's own (RunningCost, app/core/thread_usage.py), kept beside it.
COST = "total_cost_usd"
TURN_COST = "cost_usd"


def reported_usage(result):
    """Token counts a result line reports itself ({} when it reports none)."""
    usage = result.get("usage")
    source, aliases = (usage, {}) if usage else (result.get("stats") or {}, STATS_ALIASES)
    if not isinstance(source, dict):
        return {}
    return {aliases.get(key, key): value for key, value in source.items()
            if (key.endswith("tokens") or key in aliases) and _count(value)}


def token_totals(usage_by_message):
    """Token counts summed over messages, each message's usage counted once."""
    totals = {}
    for usage in usage_by_message.values():
        for key, value in usage.items():
            totals[key] = totals.get(key, 0) + value
    return totals


def turn_usage(result, usage_by_message):
    """The turn's usage: its result's report, else the fold of its messages."""
    return reported_usage(result) or token_totals(usage_by_message)


def transcript_delta(turns):
    """What `turns` (TranscriptTurns) add to the session's transcript usage: the four
    token counts and the cost (each turn's own, not the running cost its result
    reports), all zero when they report nothing."""
    delta = dict.fromkeys(TRANSCRIPT_TOKENS, 0)
    delta[COST] = 0.0
    for turn in turns:
        for key, value in _in_claudes_terms(turn.usage).items():
            delta[key] += value
        cost = turn.result.get(TURN_COST)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < 1e9:
            delta[COST] += cost
    return delta


def _in_claudes_terms(usage):
    """A turn's counts under the session's names, input without its cached part."""
    counts = {key: usage[key] for key in TRANSCRIPT_TOKENS if _count(usage.get(key))}
    cached = usage.get(CACHED_PART)
    if _count(cached):
        counts["cache_read_input_tokens"] = counts.get("cache_read_input_tokens", 0) + cached
        counts["input_tokens"] = max(0, counts.get("input_tokens", 0) - cached)
    return counts


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40
