"""The usage report a provider's result line carries, for POST .../usage.

Claude's `result` line has the run's `usage` (input counted with its cache reads
and writes) and `num_turns`; Codex's `turn.completed` has the thread's running total
(earlier turns, and earlier runs of a resumed thread, included: `Reports` steps it);
Gemini's `result` has `stats`. The report id is the line's seq, so a line posted
again (a retry, a resumed run) is counted once.
"""
import json

from app.core.thread_usage import ThreadUsage

# A cheap test before parsing: only these lines can carry a report.
MARKERS = ('"result"', '"turn.completed"')
CLAUDE_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class Reports:
    """The reports of one session's lines, in seq order. Codex's running totals are
    stepped as the server's fold steps them (`ThreadUsage`): a turn reports what its
    total adds to its thread's last one (a total below it, a copy, reports nothing). A
    line's report is worked out once and kept, so a batch posted again carries the same
    reports; a resumed run reads the spooled lines first (`read`) to know the totals so far."""

    def __init__(self, provider):
        self.provider = provider
        self._made = {}  # seq -> the report of a stepped line (one per turn: small)
        self._thread = ThreadUsage()

    def read(self, chunks):
        """Take in lines already posted or spooled (in seq order) without posting."""
        for chunk in chunks:
            self.report(chunk)

    def report(self, chunk):
        """The report of one posted chunk (`seq`, `stream`, `data`), or None."""
        if chunk["stream"] != "stdout":
            return None
        if self.provider != "codex":
            return report_for(self.provider, chunk["seq"], chunk["data"])
        if chunk["seq"] in self._made:
            return self._made[chunk["seq"]]
        made = self._codex_step(chunk["seq"], chunk["data"])
        self._made[chunk["seq"]] = made
        return made

    def _codex_step(self, seq, line):
        if '"thread.started"' in line:
            obj = _json_object(line)
            if obj and obj.get("type") == "thread.started" and isinstance(obj.get("thread_id"), str):
                self._thread.begin_thread(obj["thread_id"])
            return None
        total = report_for("codex", seq, line)
        if total is None:
            return None
        step = self._thread.turn_usage({key: total[key] for key in ("input_tokens", "output_tokens")})
        if not step:
            return None  # below the thread's total: a copy of an earlier turn's line
        return {**total, **step}


def _json_object(line):
    """The line's JSON object, or None when it is none."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def report_for(provider, seq, line):
    """`{"report_id", "input_tokens", "output_tokens", "requests"}` for a result line, else None."""
    if not any(marker in line for marker in MARKERS):
        return None
    obj = _json_object(line)
    if obj is None:
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
