"""The usage report a provider's result line carries, for POST .../usage.

Claude's `result` line has the run's `usage` (input counted with its cache reads
and writes) and `num_turns`; Codex's `turn.completed` has the turn's `usage`;
Gemini's `result` has `stats`. The report id is the line's seq, so a line posted
again (a retry, a resumed run) is counted once.
"""
import json

# A cheap test before parsing: only these lines can carry a report.
MARKERS = ('"result"', '"turn.completed"')
CLAUDE_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def report_for(provider, seq, line):
    """`{"report_id", "input_tokens", "output_tokens", "requests"}` for a result line, else None."""
    if not any(marker in line for marker in MARKERS):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    counts = _counts(provider, obj)
    if counts is None:
        return None
    return {"report_id": f"line-{seq}", **counts}


def _counts(provider, obj):
    kind = obj.get("type")
    if provider == "claude" and kind == "result" and isinstance(obj.get("usage"), dict):
        usage = obj["usage"]
        turns = _whole(obj.get("num_turns")) or 1
        return _report(sum(_whole(usage.get(key)) for key in CLAUDE_INPUT),
                       _whole(usage.get("output_tokens")), turns)
    if provider == "codex" and kind == "turn.completed" and isinstance(obj.get("usage"), dict):
        usage = obj["usage"]
        return _report(_whole(usage.get("input_tokens")), _whole(usage.get("output_tokens")), 1)
    if provider == "gemini" and kind == "result" and isinstance(obj.get("stats"), dict):
        stats = obj["stats"]
        return _report(_whole(stats.get("input_tokens")), _whole(stats.get("output_tokens")), 1)
    return None


def _report(input_tokens, output_tokens, requests):
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "requests": requests}


def _whole(value):
    """A count the server accepts (0 to 2**40), else 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**40:
        return value
    return 0
