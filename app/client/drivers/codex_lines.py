"""What `codex app-server` prints, said in the `codex exec --json` vocabulary.

The server's Codex parser (app/providers/codex.py) reads exec's lines; app-server's
notifications carry the same facts in camelCase under other names. These pure functions
turn one app-server item or usage record into exec's shape, so a driven Codex session
is stored as a headless one is (docs/runner.md, "Codex").
"""
import json

# app-server's statuses (camelCase) -> exec's (snake_case); the others are spelt alike.
STATUSES = {"inProgress": "in_progress"}
# exec prints a started state only for what takes time to finish (FORMATS A2).
STARTED_KINDS = ("commandExecution", "mcpToolCall")


def line(record):
    """One output line (compact JSON, as the CLIs print)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _status(item):
    status = item.get("status")
    return STATUSES.get(status, status)


def _agent_message(item):
    return {"type": "agent_message", "text": item.get("text") or ""}


def _reasoning(item):
    parts = item.get("summary") or item.get("content") or []
    text = "\n\n".join(part for part in parts if isinstance(part, str))
    return {"type": "reasoning", "text": text} if text else None


def _command_execution(item):
    return {"type": "command_execution", "command": item.get("command") or "",
            "aggregated_output": item.get("aggregatedOutput") or "",
            "exit_code": item.get("exitCode"), "status": _status(item)}


def file_changes(item):
    """exec's `changes` ({path, kind}) of an app-server file change item."""
    changes = []
    for change in item.get("changes") or []:
        if isinstance(change, dict):
            kind = change.get("kind")
            changes.append({"path": change.get("path"),
                            "kind": kind.get("type") if isinstance(kind, dict) else kind})
    return changes


def _file_change(item):
    return {"type": "file_change", "changes": file_changes(item), "status": _status(item)}


def _mcp_tool_call(item):
    result = item.get("result")
    if isinstance(result, dict):
        result = {"content": result.get("content"),
                  "structured_content": result.get("structuredContent")}
    return {"type": "mcp_tool_call", "server": item.get("server"), "tool": item.get("tool"),
            "arguments": item.get("arguments"), "result": result, "error": item.get("error"),
            "status": _status(item)}


def _web_search(item):
    return {"type": "web_search", "query": item.get("query"), "action": item.get("action")}


KINDS = {"agentMessage": _agent_message, "reasoning": _reasoning,
         "commandExecution": _command_execution, "fileChange": _file_change,
         "mcpToolCall": _mcp_tool_call, "webSearch": _web_search}


def item_line(event, item):
    """exec's `item.started` / `item.updated` / `item.completed` line (`event`) for an
    app-server item, or None for a kind exec does not print (user messages, plans,
    compactions...) or a started state exec would not show."""
    kind = item.get("type") if isinstance(item, dict) else None
    build = KINDS.get(kind)
    if build is None or (event == "item.started" and kind not in STARTED_KINDS):
        return None
    body = build(item)
    if body is None:
        return None
    return line({"type": event, "item": {"id": item.get("id"), **body}})


def usage(total):
    """exec's `usage` from app-server's thread total (`tokenUsage.total`): a running total
    for the thread, input counting its cached part, as exec prints it (FORMATS B3)."""
    total = total if isinstance(total, dict) else {}
    return {"input_tokens": total.get("inputTokens", 0),
            "cached_input_tokens": total.get("cachedInputTokens", 0),
            "cache_write_input_tokens": total.get("cacheWriteInputTokens", 0),
            "output_tokens": total.get("outputTokens", 0),
            "reasoning_output_tokens": total.get("reasoningOutputTokens", 0)}
