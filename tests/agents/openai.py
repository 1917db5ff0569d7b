"""A scripted OpenAI Responses API: POST /v1/responses streaming SSE (response.created,
output items added/done, text and reasoning deltas, response.completed with usage). Codex
points at it through a model provider in CODEX_HOME/config.toml (tests/agents/clis.py)."""
import json
import shlex
import uuid

from tests.agents import scenarios
from tests.agents.serving import FakeModelServer
from tests.agents.serving import Handler

MODEL = "gpt-5.5"


def user_side(items):
    """("prompt", text) / ("tool_result", None) for each user-side input item, oldest first."""
    found = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output" or item.get("type") == "custom_tool_call_output":
            found.append(("tool_result", None))
        elif item.get("role") == "user":
            content = item.get("content")
            text = content if isinstance(content, str) else "\n".join(
                part.get("text", "") for part in content or [] if isinstance(part, dict))
            found.append(("prompt", text))
    return found


def tool_call(reply, tool_names):
    """A function_call item running the reply's shell command (a write is a shell command too)."""
    if reply["tool"] == "shell":
        command = reply["command"]
    else:
        command = f"printf %s {shlex.quote(reply['content'])} > {shlex.quote(reply['path'])}"
    name = next((n for n in ("exec_command", "shell_command", "shell") if n in tool_names), "shell")
    arguments = {"cmd": command} if name == "exec_command" else (
        {"command": command} if name == "shell_command" else {"command": ["bash", "-lc", command]})
    return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:16]}", "status": "completed",
            "call_id": f"call_{uuid.uuid4().hex[:16]}", "name": name, "arguments": json.dumps(arguments)}


def tool_names(body):
    return {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}


class ResponsesHandler(Handler):
    def do_POST(self):
        body = self.read_json()
        if not self.path.split("?")[0].endswith("/responses"):
            return self.send_json(404, {"error": {"message": self.path, "type": "not_found"}})
        reply = scenarios.pick(self.server.scenario, user_side(body.get("input") or []))
        reply = self.server.once(reply)
        if "error" in reply:
            error = reply["error"]
            return self.send_json(error.get("status", 400), {"error": {
                "message": error["message"], "type": error.get("type", "invalid_request_error"),
                "code": None, "param": None}})
        self.stream(body, reply)

    def stream(self, body, reply):
        response_id = f"resp_{uuid.uuid4().hex[:20]}"
        head = {"id": response_id, "object": "response", "model": body.get("model", MODEL)}
        self.start_events()
        self.event({"type": "response.created", "response": {**head, "status": "in_progress", "output": []}},
                   "response.created")
        output = []
        if "thinking" in reply:
            output.append(self.reasoning(len(output), reply["thinking"]))
        if "tool" in reply:
            item = tool_call(reply, tool_names(body))
            self.event({"type": "response.output_item.added", "output_index": len(output),
                        "item": {**item, "status": "in_progress", "arguments": ""}}, "response.output_item.added")
            self.event({"type": "response.output_item.done", "output_index": len(output), "item": item},
                       "response.output_item.done")
            output.append(item)
        else:
            output.append(self.message(len(output), reply))
        counts = scenarios.usage(reply)
        usage = {"input_tokens": counts["input"], "input_tokens_details": {"cached_tokens": counts["cached"]},
                 "output_tokens": counts["output"], "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": counts["input"] + counts["output"]}
        self.event({"type": "response.completed", "response": {**head, "status": "completed", "output": output,
                                                               "usage": usage}}, "response.completed")

    def reasoning(self, index, text):
        item_id = f"rs_{uuid.uuid4().hex[:16]}"
        item = {"type": "reasoning", "id": item_id, "summary": []}
        self.event({"type": "response.output_item.added", "output_index": index, "item": item},
                   "response.output_item.added")
        self.event({"type": "response.reasoning_summary_text.delta", "item_id": item_id, "output_index": index,
                    "summary_index": 0, "delta": text}, "response.reasoning_summary_text.delta")
        done = {**item, "summary": [{"type": "summary_text", "text": text}]}
        self.event({"type": "response.output_item.done", "output_index": index, "item": done},
                   "response.output_item.done")
        return done

    def message(self, index, reply):
        item_id = f"msg_{uuid.uuid4().hex[:16]}"
        item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
        self.event({"type": "response.output_item.added", "output_index": index, "item": item},
                   "response.output_item.added")
        text = reply.get("text", "")
        for piece in scenarios.chunks(text, reply.get("chunks", 2)):
            self.event({"type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                        "content_index": 0, "delta": piece}, "response.output_text.delta", reply.get("delay", 0))
        done = {**item, "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        self.event({"type": "response.output_item.done", "output_index": index, "item": done},
                   "response.output_item.done")
        return done


def server(scenario):
    """A fake Responses API playing `scenario` (a name under scenarios/ or a dict)."""
    return FakeModelServer(ResponsesHandler, scenario)
