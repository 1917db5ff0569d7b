"""Older Codex CLIs' `codex exec --json` lines: `{"id": "0", "msg": {"type": ...}}`.

Before the thread/turn/item events (codex.py), `codex exec --json` printed the
agent's protocol events one per line, each under `msg`, after a first line
summarising the configuration (`{"model": ..., "sandbox": ..., ...}`, no `msg`)
and one echoing the prompt. A command is a pair, `exec_command_begin` then
`exec_command_end` with the same `call_id`; they become a tool_use and its
tool_result, as Claude's lines do. `task_started` / `task_complete` bound the
turn. Streaming deltas (`*_delta`) are skipped: the whole message follows them.
"""
import shlex
from dataclasses import replace

from app.providers.decode import text_of
from app.transcript.event_types import ASSISTANT
from app.transcript.event_types import RESULT
from app.transcript.event_types import SYSTEM
from app.transcript.event_types import TOOL_RESULTS
from app.transcript.event_types import TURN_STARTED
from app.transcript.event_types import StreamEvent
from app.transcript.event_types import ignored

USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens",
                "total_tokens")


def parse_object(obj):
    """A decoded line with no `type` of its own: a legacy event, the configuration
    summary, or something else (ignored)."""
    msg = obj.get("msg")
    if isinstance(msg, dict):
        parser = PARSERS.get(msg.get("type")) if isinstance(msg.get("type"), str) else None
        return parser(msg) if parser else ignored("unknown_type")
    if isinstance(obj.get("model"), str) and "prompt" not in obj:
        return _configuration(obj)
    return ignored("unknown_type")


def _configuration(obj):
    """The first line: the model and the working directory, as an init note."""
    parts = [f"model={obj['model']}"]
    if isinstance(obj.get("workdir"), str):
        parts.append(f"cwd={obj['workdir']}")
    return StreamEvent(SYSTEM, text="Session started: " + ", ".join(parts), info={"subtype": "init"})


def _session_configured(msg):
    model, session = text_of(msg.get("model")), text_of(msg.get("session_id"))
    parts = [f"{key}={value}" for key, value in (("model", model), ("session", session)) if value]
    return StreamEvent(SYSTEM, text="Session started: " + (", ".join(parts) or "no details"),
                       info={"subtype": "init"})


def _task_started(msg):
    return StreamEvent(TURN_STARTED)


def _task_complete(msg):
    info = {"subtype": "success", "is_error": False}
    if text_of(msg.get("last_agent_message")):
        info["result"] = msg["last_agent_message"]
    return StreamEvent(RESULT, info=info)


def _turn_aborted(msg):
    reason = text_of(msg.get("reason")) or "aborted"
    return StreamEvent(RESULT, info={"subtype": "error", "is_error": True,
                                     "terminal_reason": f"aborted_{reason}", "result": reason})


def _text_block(kind):
    def parse(msg):
        text = text_of(msg.get("message")) or text_of(msg.get("text"))
        return StreamEvent(ASSISTANT, ({"type": kind, "text": text},)) if text else ignored("empty_message")
    return parse


def _note(msg):
    text = text_of(msg.get("message")).strip()
    return StreamEvent(SYSTEM, text=text, info={"subtype": "error"})


def _token_count(msg):
    """The session's token totals so far (`info.total_token_usage`, or the older flat
    form): the latest is the turn's usage, one `codex exec` task being one turn."""
    info = msg.get("info")
    source = info.get("total_token_usage") if isinstance(info, dict) else msg
    usage = {key: source[key] for key in USAGE_FIELDS if _count(source.get(key))} \
        if isinstance(source, dict) else {}
    return StreamEvent(ASSISTANT, info={"turn_usage": usage}) if usage else ignored("no_usage")


def _exec_begin(msg):
    command = msg.get("command")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = shlex.join(command)
    return _use(msg, "command_execution", {"command": command})


def _exec_end(msg):
    output = msg.get("aggregated_output")
    if not isinstance(output, str):
        output = text_of(msg.get("stdout")) + text_of(msg.get("stderr"))
    exit_code = msg.get("exit_code")
    known = isinstance(exit_code, int) and not isinstance(exit_code, bool)
    result = _result(msg, output, known and exit_code != 0)
    # the exit code rides beside the block, for the evidence record, as codex.py does
    return replace(result, info={"exit_code": exit_code}) if known else result


def _mcp_begin(msg):
    invocation = msg.get("invocation") if isinstance(msg.get("invocation"), dict) else {}
    arguments = invocation.get("arguments")
    name = f"{text_of(invocation.get('server'))}.{text_of(invocation.get('tool'))}"
    return _use(msg, name, arguments if arguments is not None else {})


def _mcp_end(msg):
    result = msg.get("result") if isinstance(msg.get("result"), dict) else {}
    if "Err" in result:
        return _result(msg, text_of(result["Err"]) or str(result["Err"]), True)
    ok = result.get("Ok") if isinstance(result.get("Ok"), dict) else {}
    return _result(msg, ok.get("content", ""), bool(ok.get("isError") or ok.get("is_error")))


def _patch_begin(msg):
    changes = msg.get("changes") if isinstance(msg.get("changes"), dict) else {}
    listed = [{"path": path, "kind": next(iter(change), "update") if isinstance(change, dict) else "update"}
              for path, change in changes.items()]
    return _use(msg, "file_change", {"changes": listed})


def _patch_end(msg):
    output = text_of(msg.get("stdout")) + text_of(msg.get("stderr"))
    return _result(msg, output, msg.get("success") is False)


def _web_search_end(msg):
    return _use(msg, "web_search", {"query": msg.get("query")})


def _plan_update(msg):
    plan = msg.get("plan") if isinstance(msg.get("plan"), list) else []
    tool_input = {"plan": plan}
    if text_of(msg.get("explanation")):
        tool_input["explanation"] = msg["explanation"]
    return StreamEvent(ASSISTANT, ({"type": "tool_use", "id": None, "name": "update_plan",
                                    "input": tool_input},))


def _use(msg, name, tool_input):
    block = {"type": "tool_use", "id": msg.get("call_id"), "name": name, "input": tool_input}
    return StreamEvent(ASSISTANT, (block,))


def _result(msg, content, is_error):
    block = {"type": "tool_result", "tool_use_id": msg.get("call_id"),
             "content": content if content is not None else "", "is_error": bool(is_error)}
    return StreamEvent(TOOL_RESULTS, (block,))


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40


PARSERS = {
    "session_configured": _session_configured,
    "task_started": _task_started,
    "task_complete": _task_complete,
    "turn_aborted": _turn_aborted,
    "agent_message": _text_block("text"),
    "agent_reasoning": _text_block("reasoning"),
    "error": _note,
    "stream_error": _note,
    "token_count": _token_count,
    "exec_command_begin": _exec_begin,
    "exec_command_end": _exec_end,
    "mcp_tool_call_begin": _mcp_begin,
    "mcp_tool_call_end": _mcp_end,
    "patch_apply_begin": _patch_begin,
    "patch_apply_end": _patch_end,
    "web_search_end": _web_search_end,
    "plan_update": _plan_update,
}
