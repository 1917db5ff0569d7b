"""A scripted Anthropic Messages API: POST /v1/messages (streaming SSE the way the real
API streams, or one JSON body), POST /v1/messages/count_tokens. Claude Code points at it
with ANTHROPIC_BASE_URL."""
import json
import uuid

from tests.agents import scenarios
from tests.agents.serving import FakeModelServer
from tests.agents.serving import Handler

MODEL = "claude-sonnet-4-5"
TOOLS = {"shell": "Bash", "write": "Write", "task": "Task"}


def user_side(messages):
    """("prompt", text) / ("tool_result", None) for each user message, oldest first."""
    items = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            items.append(("prompt", content))
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        if any(b.get("type") == "tool_result" for b in blocks):
            items.append(("tool_result", None))
        else:
            items.append(("prompt", "\n".join(b.get("text", "") for b in blocks)))
    return items


def blocks_of(reply):
    """The content blocks of a reply, as the final message holds them."""
    if "tool" in reply:
        if reply["tool"] == "shell":
            tool_input = {"command": reply["command"], "description": "Run a command"}
        elif reply["tool"] == "task":
            tool_input = {"description": "A sub-agent", "prompt": reply["prompt"],
                          "subagent_type": "general-purpose"}
        else:
            tool_input = {"file_path": reply["path"], "content": reply["content"]}
        return [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}",
                 "name": TOOLS[reply["tool"]], "input": tool_input}]
    blocks = []
    if "thinking" in reply:
        blocks.append({"type": "thinking", "thinking": reply["thinking"], "signature": "c2lnbmF0dXJl"})
    blocks.append({"type": "text", "text": reply.get("text", "")})
    return blocks


def usage_of(reply, output):
    counts = scenarios.usage(reply)
    return {"input_tokens": counts["input"], "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": counts["cached"], "output_tokens": output}


class AnthropicHandler(Handler):
    def do_POST(self):
        body = self.read_json()
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self.send_json(200, {"input_tokens": 100})
        if not path.endswith("/v1/messages"):
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                   "message": path}})
        if self.server.has_tools(body):
            reply = scenarios.pick(self.server.scenario, user_side(body.get("messages", [])))
            reply = self.server.once(reply)
        else:
            reply = {"text": scenarios.SIDE_ANSWER}
        if "error" in reply:
            return self.send_error_reply(reply["error"])
        message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                   "model": body.get("model", MODEL), "content": blocks_of(reply),
                   "stop_reason": "tool_use" if "tool" in reply else "end_turn",
                   "stop_sequence": None}
        if not body.get("stream"):
            return self.send_json(200, {**message, "usage": usage_of(reply, scenarios.usage(reply)["output"])})
        self.stream(message, reply)

    def send_error_reply(self, error):
        """The API's error body; `"retry": false` adds the header that tells the client
        not to retry (Claude Code retries a 429 or 5xx for minutes otherwise)."""
        data = json.dumps({"type": "error", "error": {"type": error.get("type", "invalid_request_error"),
                                                      "message": error["message"]}}).encode()
        self.send_response(error.get("status", 400))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if error.get("retry") is False:
            self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)

    def stream(self, message, reply):
        self.start_events()
        start = {**message, "content": [], "stop_reason": None, "usage": usage_of(reply, 1)}
        self.event({"type": "message_start", "message": start}, "message_start")
        for index, block in enumerate(message["content"]):
            self.stream_block(index, block, reply)
        self.event({"type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": scenarios.usage(reply)["output"]}}, "message_delta")
        self.event({"type": "message_stop"}, "message_stop")

    def stream_block(self, index, block, reply):
        kind = block["type"]
        empty = {"text": {"text": ""}, "thinking": {"thinking": "", "signature": ""},
                 "tool_use": {"input": {}}}[kind]
        start = {k: v for k, v in block.items() if k not in empty} | empty
        self.event({"type": "content_block_start", "index": index, "content_block": start},
                   "content_block_start")
        if kind == "tool_use":
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in scenarios.chunks(json.dumps(block["input"]), 3)]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        else:
            deltas = [{"type": "text_delta", "text": piece}
                      for piece in scenarios.chunks(block["text"], reply.get("chunks", 2))]
        for delta in deltas:
            self.event({"type": "content_block_delta", "index": index, "delta": delta},
                       "content_block_delta", reply.get("delay", 0))
        self.event({"type": "content_block_stop", "index": index}, "content_block_stop")


def server(scenario):
    """A fake Anthropic API playing `scenario` (a name under scenarios/ or a dict)."""
    return FakeModelServer(AnthropicHandler, scenario)
