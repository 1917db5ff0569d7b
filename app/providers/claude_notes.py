"""The short line a person reads for a Claude `system` line or rate-limit notice. Pure.

Claude Code prints many `system` lines (hooks, status, task progress, token estimates)
that tell a reader nothing; a few tell them what happened beside the conversation: the
session started, a background task finished, the conversation was compacted, the API
failed and is being retried, a rate limit is near or reached. Those get one compact
line each (a system row of the transcript); every other one gets "" (no row).
"""
from datetime import datetime
from datetime import timezone

# Claude's names of its limits' windows, as a reader would say them.
LIMIT_NAMES = {"five_hour": "five-hour", "seven_day": "weekly", "seven_day_opus": "weekly Opus",
               "seven_day_sonnet": "weekly Sonnet"}
# `resetsAt` above this is in milliseconds (seconds reach it in the year 5138).
MILLISECONDS = 10**11


def summarise_system(subtype, obj):
    """A short human line for a system line, or "" when it says nothing to a reader."""
    summary = SUMMARIES.get(subtype)
    if summary is not None:
        return summary(obj)
    for key in ("message", "content", "text"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def summarise_rate_limit(obj):
    """A rate-limit notice's line: only a warning or a refusal says something (Claude
    reports `allowed` before most requests)."""
    info = obj.get("rate_limit_info")
    if not isinstance(info, dict):
        return ""
    status = info.get("status")
    limit = _limit_name(info.get("rateLimitType"))
    resets = _reset_time(info.get("resetsAt"))
    if status == "allowed_warning":
        used = info.get("utilization")
        share = f"{round(used * 100)}% of " if _is_number(used) and 0 <= used <= 1 else ""
        return f"Rate limit warning: {share}the {limit} used" + (f"; resets {resets}" if resets else "")
    if status == "rejected":
        return f"Rate limit reached: the {limit}" + (f"; resets {resets}" if resets else "")
    return ""


def _init(obj):
    parts = [f"model={obj['model']}"] if isinstance(obj.get("model"), str) else []
    if isinstance(obj.get("cwd"), str):
        parts.append(f"cwd={obj['cwd']}")
    if isinstance(obj.get("tools"), list):
        parts.append(f"tools={len(obj['tools'])}")
    if isinstance(obj.get("mcp_servers"), list):
        parts.append(f"mcp_servers={len(obj['mcp_servers'])}")
    return "Session started: " + (", ".join(parts) or "no details")


def _task_notification(obj):
    """A background task (a sub-agent started with Task, a background shell) ended."""
    status = _text(obj.get("status")) or "finished"
    what = _text(obj.get("summary")) or _text(obj.get("description"))
    return f"Background task {status}" + (f": {what}" if what else "")


def _compact_boundary(obj):
    meta = obj.get("compact_metadata")
    meta = meta if isinstance(meta, dict) else {}
    details = [_text(meta.get("trigger"))]
    if _is_count(meta.get("pre_tokens")):
        details.append(f"{meta['pre_tokens']:,} tokens before")
    details = [detail for detail in details if detail]
    return "Conversation compacted" + (f" ({', '.join(details)})" if details else "")


def _api_retry(obj):
    """The API failed; Claude Code waits and tries again."""
    status = obj.get("error_status")
    error = _text(obj.get("error"))
    cause = " ".join(part for part in (str(status) if _is_count(status) else "", error) if part)
    attempt, most = obj.get("attempt"), obj.get("max_retries")
    try_again = f"retry {attempt} of {most}" if _is_count(attempt) and _is_count(most) else "retrying"
    return "API error" + (f" ({cause})" if cause else "") + f", {try_again}"


SUMMARIES = {"init": _init, "task_notification": _task_notification,
             "compact_boundary": _compact_boundary, "api_retry": _api_retry}


def _limit_name(kind):
    kind = _text(kind)
    return f"{LIMIT_NAMES.get(kind, kind.replace('_', ' '))} limit" if kind else "limit"


def _reset_time(value):
    """`resetsAt` (Unix seconds, or milliseconds) as UTC text, or "" when it is not one."""
    if not _is_number(value) or value <= 0:
        return ""
    seconds = value / 1000 if value > MILLISECONDS else value
    try:
        moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return f"at {moment:%Y-%m-%d %H:%M} UTC"


def _text(value):
    return value.strip() if isinstance(value, str) else ""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
