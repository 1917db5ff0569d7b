"""What a captured run cost by the CLI's own count, to hold the transcript's usage against:
Claude's `result.usage` per turn, the last Codex `turn.completed.usage` of the thread (a
running total), Gemini's `result.stats` per run. Each as (all input, cached input, output)
in the CLI's own terms (Claude's `input_tokens` leave the cache out; Codex's and Gemini's
hold it). Used by tests/e2e/test_captured_transcripts.py and bench/captures_report.py."""


def cli_totals(cli, objs):
    """(all input, cached input, output) of the parsed lines `objs` of CLI `cli`."""
    if cli == "claude":
        usages = [obj["usage"] for obj in objs if obj.get("type") == "result"]
        return (sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                    for u in usages),
                sum(u["cache_read_input_tokens"] for u in usages), sum(u["output_tokens"] for u in usages))
    if cli == "codex":
        usages = [obj["usage"] for obj in objs if obj.get("type") == "turn.completed"]
        last = usages[-1] if usages else {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
        return last["input_tokens"], last["cached_input_tokens"], last["output_tokens"]
    stats = [obj["stats"] for obj in objs if obj.get("type") == "result"]
    return (sum(s["input_tokens"] for s in stats), sum(s["cached"] for s in stats),
            sum(s["output_tokens"] for s in stats))


def claude_model_usage(objs):
    """(all input, cached input, output) by Claude's `modelUsage`: the whole session's
    count, every model and every agent (a background sub-agent's calls, which no
    `result.usage` holds, among them), cumulative over the session's runs, so the last
    result of each session has it. None when no result carries one."""
    last = {}
    for obj in objs:
        if obj.get("type") == "result" and isinstance(obj.get("modelUsage"), dict):
            last[obj.get("session_id")] = obj["modelUsage"]
    if not last:
        return None
    models = [usage for by_model in last.values() for usage in by_model.values()]
    return (sum(u.get("inputTokens", 0) + u.get("cacheReadInputTokens", 0)
                + u.get("cacheCreationInputTokens", 0) for u in models),
            sum(u.get("cacheReadInputTokens", 0) for u in models),
            sum(u.get("outputTokens", 0) for u in models))


def claude_cost(objs):
    """Claude's own cost of the runs, in USD: a result's `total_cost_usd` is the session's
    running cost (a resumed run and a second prompt over stdin go on from it, as
    `modelUsage` does), so the last result of each session has it. None without one."""
    last = {}
    for obj in objs:
        cost = obj.get("total_cost_usd") if obj.get("type") == "result" else None
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            last[obj.get("session_id")] = cost
    return sum(last.values()) if last else None
