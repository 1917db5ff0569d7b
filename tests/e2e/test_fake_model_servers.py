"""The scripted fake model servers (tests/agents) on their own, without the CLIs: each
streams the way its API does, plays a scenario turn by turn from the conversation it is
sent, answers side requests and errors, and records what it got."""
import json
import time
import urllib.error
import urllib.request

import pytest

from tests.agents import anthropic
from tests.agents import gemini
from tests.agents import openai
from tests.agents import scenarios

TOOLS = [{"name": "Bash"}]


def post(base, path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type"), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type"), err.read().decode()


def events(text):
    """[(event name or None, data)] of an SSE body."""
    found = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields.get("event"), json.loads(fields["data"])))
    return found


def claude_request(*messages):
    return {"model": "m", "stream": True, "tools": TOOLS, "max_tokens": 100, "messages": list(messages)}


def test_anthropic_streams_a_tool_call_then_the_answer_after_its_result():
    prompt = {"role": "user", "content": [{"type": "text", "text": "Run echo turnlog-shell-ok in the shell."}]}
    with anthropic.server("shell_ok") as fake:
        status, kind, body = post(fake.base, "/v1/messages?beta=true", claude_request(prompt))
        assert status == 200 and kind == "text/event-stream"
        names = [name for name, _ in events(body)]
        assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                         "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
        streamed = events(body)
        call = streamed[1][1]["content_block"]
        assert call["type"] == "tool_use" and call["name"] == "Bash"
        partial = "".join(data["delta"]["partial_json"] for name, data in streamed if name == "content_block_delta")
        assert json.loads(partial)["command"] == "echo turnlog-shell-ok"
        assert streamed[-2][1]["delta"]["stop_reason"] == "tool_use"

        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "ok"}]}
        assistant = {"role": "assistant", "content": [call]}
        _, _, body = post(fake.base, "/v1/messages", claude_request(prompt, assistant, result))
        text = "".join(d["delta"].get("text", "") for n, d in events(body) if n == "content_block_delta")
        assert text == "The command printed turnlog-shell-ok."
        assert events(body)[-2][1]["usage"]["output_tokens"] == 12
        assert len(fake.model_calls()) == 2


def test_anthropic_side_requests_errors_and_token_counts():
    with anthropic.server("api_error") as fake:
        status, _, body = post(fake.base, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "This request fails. Give it a title"}]})
        assert status == 200 and json.loads(body)["content"][0]["text"] == "Turnlog test"
        status, _, body = post(fake.base, "/v1/messages", claude_request(
            {"role": "user", "content": "This request fails."}))
        assert status == 400 and json.loads(body)["error"]["type"] == "invalid_request_error"
        status, _, body = post(fake.base, "/v1/messages/count_tokens", {"messages": []})
        assert status == 200 and json.loads(body)["input_tokens"] > 0
        assert [r["path"] for r in fake.requests] == ["/v1/messages", "/v1/messages", "/v1/messages/count_tokens"]


def test_anthropic_thinking_comes_before_the_text_with_its_signature():
    with anthropic.server("thinking") as fake:
        _, _, body = post(fake.base, "/v1/messages", claude_request(
            {"role": "user", "content": "Think, then answer: what is 2+2?"}))
    blocks = [d["content_block"]["type"] for n, d in events(body) if n == "content_block_start"]
    deltas = [d["delta"]["type"] for n, d in events(body) if n == "content_block_delta"]
    assert blocks == ["thinking", "text"]
    assert deltas[:2] == ["thinking_delta", "signature_delta"]


def test_a_slow_reply_is_streamed_in_pieces_over_time():
    with anthropic.server("slow") as fake:
        started = time.monotonic()
        _, _, body = post(fake.base, "/v1/messages", claude_request({"role": "user", "content": "Tell a slow story."}))
        took = time.monotonic() - started
    assert sum(1 for n, _ in events(body) if n == "content_block_delta") == 20
    assert took >= 19 * 0.25 * 0.9  # loose: the pieces are 0.25 s apart


def test_responses_streams_a_function_call_then_a_message_with_cached_usage():
    prompt = {"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "Second question: and of Italy?"}]}
    with openai.server("multi_turn") as fake:
        status, kind, body = post(fake.base, "/v1/responses", {"model": "m", "stream": True, "input": [prompt],
                                                               "tools": [{"type": "function", "name": "shell"}]})
    assert status == 200 and kind == "text/event-stream"
    names = [name for name, _ in events(body)]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert "".join(d["delta"] for n, d in events(body) if n == "response.output_text.delta") == "Rome."
    usage = events(body)[-1][1]["response"]["usage"]
    assert usage["input_tokens"] == 260 and usage["input_tokens_details"]["cached_tokens"] == 150

    with openai.server("shell_ok") as fake:
        _, _, body = post(fake.base, "/v1/responses", {"model": "m", "input": [
            {"role": "user", "content": "Run echo turnlog-shell-ok in the shell."}],
            "tools": [{"type": "function", "name": "shell"}]})
    [call] = [d["item"] for n, d in events(body) if n == "response.output_item.done"]
    assert call["type"] == "function_call" and call["name"] == "shell"
    assert json.loads(call["arguments"])["command"][-1] == "echo turnlog-shell-ok"


@pytest.mark.parametrize("scenario, status", [("plain", 200), ("api_error", 400)])
def test_gemini_streams_candidates_and_answers_the_routing_question(scenario, status):
    with gemini.server(scenario) as fake:
        path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        got, _, body = post(fake.base, path, {"contents": [
            {"role": "user", "parts": [{"text": "Say hello to turnlog."}]}], "tools": [{"functionDeclarations": []}]})
        routed, _, route = post(fake.base, "/v1beta/models/gemini-2.5-flash:generateContent", {
            "contents": [], "generationConfig": {"responseJsonSchema": {"properties": {
                "model_choice": {"type": "string", "enum": ["flash", "pro"]}}}}})
    assert routed == 200
    assert json.loads(json.loads(route)["candidates"][0]["content"]["parts"][0]["text"]) == {"model_choice": "flash"}
    if status != 200:
        # the scenario answers "This request fails."; any other prompt gets the plain side answer
        assert got == 200
        return
    chunks = [data for _, data in events(body)]
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == \
        "Hello, turnlog! This is a plain answer."
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 11


@pytest.mark.parametrize("scenario, status, quota", [("usage_limit", 429, "RESOURCE_EXHAUSTED"),
                                                     ("api_error", 400, "INVALID_ARGUMENT")])
def test_gemini_says_a_spent_daily_quota_as_the_api_does(scenario, status, quota):
    """A 429 not to be retried is a QuotaFailure on a per-day quota: what Gemini CLI gives up
    on at once (it retries other 429s); other errors carry no details."""
    prompt = " ".join(turn["prompt"] for turn in scenarios.load(scenario)["turns"])
    with gemini.server(scenario) as fake:
        got, _, body = post(fake.base, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}], "tools": [{"functionDeclarations": []}]})
    error = json.loads(body)["error"]
    assert (got, error["code"], error["status"]) == (status, status, quota)
    violations = [v for detail in error.get("details", []) for v in detail.get("violations", [])]
    assert [v["quotaId"] for v in violations] == (
        ["GenerateRequestsPerDayPerProjectPerModel-FreeTier"] if status == 429 else [])
