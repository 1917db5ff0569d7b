"""A scripted Gemini API: POST .../models/<model>:generateContent (one JSON body; the CLI's
routing question) and :streamGenerateContent?alt=sse (one candidate chunk per event, the
last with finishReason and usageMetadata). Gemini CLI points at it with
GOOGLE_GEMINI_BASE_URL."""
import json

from tests.agents import scenarios
from tests.agents.serving import FakeModelServer
from tests.agents.serving import Handler

MODEL = "gemini-2.5-flash"
TOOLS = {"shell": "run_shell_command", "write": "write_file"}


def user_side(contents):
    """("prompt", text) / ("tool_result", None) for each user turn, oldest first."""
    found = []
    for content in contents:
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if any("functionResponse" in p for p in parts):
            found.append(("tool_result", None))
        else:
            found.append(("prompt", "\n".join(p.get("text", "") for p in parts)))
    return found


def routing_answer(body):
    """What the routing call wants: a JSON object naming a model (its schema says which keys)."""
    schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or \
        (body.get("generationConfig") or {}).get("responseSchema") or {}
    answer = {}
    for key, spec in (schema.get("properties") or {}).items():
        kind = (spec or {}).get("type", "string")
        enum = (spec or {}).get("enum")
        answer[key] = enum[0] if enum else (1 if kind in ("integer", "number") else "flash")
    return answer or {"model_choice": "flash", "reasoning": "simple"}


def usage_metadata(reply):
    counts = scenarios.usage(reply)
    return {"promptTokenCount": counts["input"], "candidatesTokenCount": counts["output"],
            "cachedContentTokenCount": counts["cached"], "totalTokenCount": counts["input"] + counts["output"]}


def chunk(parts, finish=None, usage=None):
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    data = {"candidates": [candidate], "modelVersion": MODEL}
    if usage:
        data["usageMetadata"] = usage
    return data


def error_body(error):
    """The API's error body. A 429 not to be retried is a daily quota spent, as the API
    says it (a QuotaFailure whose quota is per day): Gemini CLI gives up on that at once
    and retries any other 429."""
    status = error.get("status", 400)
    body = {"code": status, "message": error["message"], "status": "INVALID_ARGUMENT"}
    if status == 429 and error.get("retry") is False:
        body["status"] = "RESOURCE_EXHAUSTED"
        body["details"] = [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "quotaDimensions": {"model": MODEL}, "quotaValue": "250"}]}]
    return {"error": body}


class GeminiHandler(Handler):
    def do_POST(self):
        body = self.read_json()
        path = self.path.split("?")[0]
        if path.endswith(":countTokens"):
            return self.send_json(200, {"totalTokens": 100})
        if path.endswith(":generateContent"):
            text = json.dumps(routing_answer(body))
            return self.send_json(200, chunk([{"text": text}], "STOP", usage_metadata({"usage": {"output": 5}})))
        if not path.endswith(":streamGenerateContent"):
            return self.send_json(404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
        if self.server.has_tools(body):
            reply = scenarios.pick(self.server.scenario, user_side(body.get("contents") or []))
            reply = self.server.once(reply)
        else:
            reply = {"text": scenarios.SIDE_ANSWER}
        if "error" in reply:
            return self.send_json(reply["error"].get("status", 400), error_body(reply["error"]))
        self.stream(reply)

    def stream(self, reply):
        self.start_events()
        if "thinking" in reply:
            self.event(chunk([{"text": reply["thinking"], "thought": True}]))
        if "tool" in reply:
            args = {"command": reply["command"]} if reply["tool"] == "shell" else \
                {"file_path": reply["path"], "content": reply["content"]}
            self.event(chunk([{"functionCall": {"name": TOOLS[reply["tool"]], "args": args}}],
                             "STOP", usage_metadata(reply)))
            return
        pieces = scenarios.chunks(reply.get("text", ""), reply.get("chunks", 2))
        for piece in pieces[:-1]:
            self.event(chunk([{"text": piece}]), delay=reply.get("delay", 0))
        self.event(chunk([{"text": pieces[-1]}], "STOP", usage_metadata(reply)), delay=reply.get("delay", 0))


def server(scenario):
    """A fake Gemini API playing `scenario` (a name under scenarios/ or a dict)."""
    return FakeModelServer(GeminiHandler, scenario)
