"""A turn's token usage, and what it adds to the session's `transcript_usage`. Pure.

A turn's own result line is the agent's total for it (Claude's `result.usage`,
Codex's `turn.completed` usage, Gemini's `stats`), so it wins; without one, the
per-message fold of the turn's lines stands in (`token_totals`).
"""

# The session-level sums, by the names Claude's API uses. Codex reports cached
# input as `cached_input_tokens`; it is counted as cache read.
TRANSCRIPT_TOKENS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens")
ALIASES = {"cached_input_tokens": "cache_read_input_tokens"}
COST = "total_cost_usd"


def reported_usage(result):
    """Token counts a result line reports itself ({} when it reports none)."""
    source = result.get("usage") or result.get("stats") or {}
    if not isinstance(source, dict):
        return {}
    return {key: value for key, value in source.items() if key.endswith("tokens") and _count(value)}


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
    token counts and the cost, all zero when they report nothing."""
    delta = dict.fromkeys(TRANSCRIPT_TOKENS, 0)
    delta[COST] = 0.0
    for turn in turns:
        for key, value in turn.usage.items():
            key = ALIASES.get(key, key)
            if key in delta and _count(value):
                delta[key] += value
        cost = turn.result.get(COST)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < 1e9:
            delta[COST] += cost
    return delta


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40
