"""The runner's parts against fakes: usage reports, retries and splits, the follow view,
and the client's promise not to import the server."""
import json
import queue
import random
import subprocess
import sys

import pytest

from app.client import usage
from app.client.backoff import Backoff
from app.client.batcher import Batcher
from app.client.errors import BATCH_GIVEN_UP
from app.client.errors import ApiError
from app.client.errors import BatchGivenUp
from app.client.errors import RunnerFailed
from app.client.errors import Unreachable
from app.client.render import Renderer
from app.client.runner import Pump
from app.client.runner import Recorder
from app.client.sender import Sender
from app.client.spool import Spool
from app.client.spool import load
from app.client.sse import Event
from tests import claude_lines as cl

SID = "5f0c9a7e-2b1d-4c3e-8f6a-0d9e8c7b6a51"


def test_the_client_imports_neither_the_app_nor_the_services_nor_storage():
    # `app/__init__.py` imports flask and app.config only (create_app imports the rest
    # when called), so flask itself may load; nothing of the server may.
    code = ("import sys, app.client, app.client.commands, app.client.runner\n"
            "server = ('app.services', 'app.storage', 'flask_sqlalchemy', 'sqlalchemy', 'app.db',"
            " 'app.extensions', 'app.cli', 'app.auth', 'app.ingest', 'app.sessions', 'app.streaming')\n"
            "bad = [m for m in sys.modules if m in server or m.startswith(tuple(p + '.' for p in server))]\n"
            "assert bad == [], bad\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("provider, line, expected", [
    ("claude", {"type": "result", "num_turns": 3, "usage": {
        "input_tokens": 4, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100,
        "output_tokens": 55}}, (114, 55, 3)),
    ("codex", {"type": "turn.completed", "usage": {"input_tokens": 9, "cached_input_tokens": 2,
                                                   "output_tokens": 5}}, (9, 5, 1)),
    ("gemini", {"type": "result", "status": "success",
                "stats": {"total_tokens": 30, "input_tokens": 20, "output_tokens": 10}}, (20, 10, 1)),
])
def test_each_providers_result_line_gives_one_report_named_by_its_seq(provider, line, expected):
    report = usage.report_for(provider, 41, json.dumps(line))
    assert report == {"report_id": "line-41", "input_tokens": expected[0],
                      "output_tokens": expected[1], "requests": expected[2]}


@pytest.mark.parametrize("provider, line", [
    ("claude", '{"type": "assistant", "message": {"content": "result"}}'),
    ("claude", '{"type": "turn.completed", "usage": {"input_tokens": 1}}'),  # codex's, not claude's
    ("codex", "not json but \"result\""),
    ("gemini", '{"type": "result", "stats": {"input_tokens": true, "output_tokens": -4}}'),
])
def test_other_lines_give_no_report_and_bad_counts_are_zero(provider, line):
    report = usage.report_for(provider, 1, line)
    assert report is None or (report["input_tokens"], report["output_tokens"]) == (0, 0)


class FakeWriter:
    """Answers each post_output with the next scripted outcome (an exception or None)."""

    def __init__(self, outcomes, limit=None):
        self.outcomes = list(outcomes)
        self.limit = limit  # batches above this many chunks are a 413
        self.stored = []
        self.usage = []  # (seqs of a stored batch, report ids posted with it)

    def post_output(self, session_id, batch, usage=()):
        if self.outcomes:
            outcome = self.outcomes.pop(0)
            if outcome is not None:
                raise outcome
        if self.limit is not None and len(batch) > self.limit:
            raise ApiError(413, "request_entity_too_large", "too big")
        self.stored.extend(c["seq"] for c in batch)
        self.usage.append(([c["seq"] for c in batch], [r["report_id"] for r in usage]))
        return {"accepted": len(batch)}


def quiet_sender():
    waits = []
    sender = Sender(Backoff(base=0.01, cap=0.05, rng=random.Random(5)), idle=waits.append,
                    log=lambda text: None)
    return sender, waits


def batch(n):
    return [{"seq": seq, "stream": "stdout", "data": "x"} for seq in range(n)]


def test_connection_errors_5xx_and_429_are_retried_and_retry_after_is_honoured():
    sender, waits = quiet_sender()
    writer = FakeWriter([Unreachable("refused"), ApiError(503, "database_busy", "busy"),
                         ApiError(429, "rate_limited", "slow down", retry_after=2.0)])
    sender.send(writer, "s", batch(3))
    assert writer.stored == [0, 1, 2]
    assert len(waits) == 3 and waits[2] >= 2.0


@pytest.mark.parametrize("error, words", [
    (ApiError(401, "invalid_token", "unknown or revoked token"), "refused the runner token"),
    (ApiError(403, "wrong_token_kind", "a user token may not write"), "may not do this"),
    (ApiError(404, "session_not_found", "no such session"), "assign-machine"),
    (ApiError(409, "seq_conflict", "seq 4 was stored with other content", {"seq": 4}), "line seq 4"),
    (ApiError(422, "validation_error", "invalid", {"fields": {"user_id": ["Longer than 200."]}}),
     "user_id"),
    (ApiError(413, "line_too_long", "chunk 0 is too long", {"index": 0, "seq": 7}), "line seq 7"),
])
def test_a_4xx_stops_at_once_with_a_message_naming_what_to_fix(error, words):
    sender, waits = quiet_sender()
    with pytest.raises(RunnerFailed, match=words):
        sender.send(FakeWriter([error]), "s", batch(1))
    assert waits == []


def test_a_batch_too_big_for_the_server_is_split_until_it_fits():
    sender, _ = quiet_sender()
    writer = FakeWriter([], limit=30)
    sender.send(writer, "s", batch(100))
    assert writer.stored == list(range(100))


def test_one_line_over_the_request_limit_is_reported_not_split_forever():
    sender, _ = quiet_sender()
    with pytest.raises(RunnerFailed, match="one line alone"):
        sender.send(FakeWriter([], limit=0), "s", batch(4))


def test_a_batch_that_fails_on_the_server_n_times_in_a_row_is_given_up_naming_its_seqs():
    sender, waits = quiet_sender()
    sender.max_batch_failures = 3
    failures = [ApiError(500, "internal_error", "boom"), Unreachable("reset", reached=True),
                ApiError(502, "http_502", "Bad Gateway"), None]
    writer = FakeWriter(failures)
    with pytest.raises(BatchGivenUp, match=r"seqs 0\.\.4 after it failed on the server 3 times"
                       r" in a row \(500 internal_error; no answer") as raised:
        sender.send(writer, "s", batch(5))
    assert raised.value.exit_code == BATCH_GIVEN_UP
    assert writer.stored == [] and len(waits) == 2


def test_waiting_for_an_absent_or_busy_server_does_not_count_towards_giving_up():
    sender, waits = quiet_sender()
    sender.max_batch_failures = 2
    writer = FakeWriter([ApiError(500, "internal_error", "boom"), Unreachable("refused"),
                         ApiError(503, "database_busy", "busy"),
                         ApiError(429, "rate_limited", "slow"), Unreachable("refused")] * 1)
    sender.send(writer, "s", batch(2))
    assert writer.stored == [0, 1] and len(waits) == 5


def test_the_count_starts_again_for_another_batch_and_after_a_success():
    sender, _ = quiet_sender()
    sender.max_batch_failures = 2
    boom = ApiError(500, "internal_error", "boom")
    writer = FakeWriter([boom, None, boom, None], limit=None)
    sender.send(writer, "s", batch(2))
    sender.send(writer, "s", batch(2))  # the same seqs again: a new run of failures
    assert writer.stored == [0, 1, 0, 1]
    halves = FakeWriter([boom], limit=1)  # 413, then each half is a batch of its own
    sender.send(halves, "s", batch(2))
    assert halves.stored == [0, 1]


def render(events, raw=False):
    out = []
    renderer = Renderer(out.append, raw=raw)
    for name, data in events:
        renderer.handle(Event(name, json.dumps(data), None))
    return "".join(out)


def test_follow_prints_streamed_text_once_a_line_per_tool_call_and_results_collapsed():
    text = render([
        ("block.started", {"turn_id": "t1", "block_id": "b0", "kind": "thinking"}),
        ("block.completed", {"turn_id": "t1", "block_id": "b0", "kind": "thinking",
                             "block": {"type": "thinking", "thinking": "secret plan"}}),
        ("block.started", {"turn_id": "t1", "block_id": "b1", "kind": "text"}),
        ("block.delta", {"turn_id": "t1", "block_id": "b1", "text": "Hel"}),
        ("block.delta", {"turn_id": "t1", "block_id": "b1", "text": "lo"}),
        ("block.completed", {"turn_id": "t1", "block_id": "b1", "kind": "text",
                             "block": {"type": "text", "text": "Hello world"}}),
        ("block.completed", {"turn_id": "t1", "block_id": "b2", "kind": "tool_use",
                             "block": {"type": "tool_use", "name": "Bash",
                                       "input": {"command": "ls -la"}}}),
        ("block.completed", {"turn_id": "t1", "block_id": "b3", "kind": "tool_result",
                             "block": {"type": "tool_result", "content": "a\nb\nc"}}),
        ("end", {"status": "failed", "exit_code": 3}),
    ])
    assert text == ("Hello world\n> Bash(ls -la)\n  = a\n  = b\n  = c\n"
                    "[session failed, exit code 3]\n")


def tool(name, arguments, result, is_error=False):
    return [("block.completed", {"turn_id": "t", "block_id": "u", "kind": "tool_use",
                                 "block": {"type": "tool_use", "name": name, "input": arguments}}),
            ("block.completed", {"turn_id": "t", "block_id": "r", "kind": "tool_result",
                                 "block": {"type": "tool_result", "content": result,
                                           "is_error": is_error}})]


def test_follow_names_a_call_by_its_main_argument():
    text = render(tool("Bash", {"command": "python -m pytest -q", "description": "run tests"}, "ok")
                  + tool("Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"}, "ok"))
    assert text.splitlines()[0] == "> Bash(python -m pytest -q)"
    assert text.splitlines()[2] == "> Edit(app.py)"


def test_follow_keeps_the_last_meaningful_lines_of_a_long_result():
    output = "\n".join(["============ test session starts ============", *(f"line {n}" for n in range(40)),
                        "FAILED tests/test_x.py::test_a - assert 1 == 2", "",
                        "======= 1 failed, 40 passed in 0.52s =======", "========"])
    lines = render(tool("Bash", {"command": "pytest"}, output, is_error=True)).splitlines()
    assert lines[1:] == ["  = ... (+40 earlier lines)",
                         "  = error: line 39",
                         "  = FAILED tests/test_x.py::test_a - assert 1 == 2",
                         "  = 1 failed, 40 passed in 0.52s"]


def test_follow_header_names_the_session_its_kind_agent_and_status():
    from app.client.render import header
    assert header({"session_id": "s1", "session_type": "agent", "provider": "claude",
                   "status": "failed", "exit_code": 2, "machine": "m1", "user_id": "alice"}) == (
        "session s1: agent, claude, failed (exit code 2); machine m1, owner alice")


def test_follow_raw_prints_the_payload_lines():
    text = render([("output", {"event_index": 0, "stream": "stdout", "payload": '{"type": "x"}'}),
                   ("block.delta", {"turn_id": "t", "block_id": "b", "text": "ignored"})], raw=True)
    assert text == '{"type": "x"}\n'


class FakeChild:
    """What the pump reads: a queue of recorded chunks, None at each stream's end."""

    def __init__(self, count, record):
        self.lines = queue.Queue()
        self.open_streams = 2
        for n in range(count):
            self.lines.put(record("stderr" if n % 10 == 0 else "stdout", f"line {n}"))
        self.lines.put(None)
        self.lines.put(None)


def test_the_pump_posts_a_burst_of_lines_each_once_in_order_and_acks_them_all(tmp_path):
    spool = Spool.create(tmp_path, SID, "http://server")
    writer, child = FakeWriter([]), FakeChild(2500, Recorder(spool, 0))  # > one drain's worth
    sender, _ = quiet_sender()
    Pump(writer, SID, spool, child, sender, Batcher(), "claude").run()
    spool.close()
    assert writer.stored == list(range(2500))
    state, _ = load(spool.path)
    assert (state.next_seq, state.acked, state.unacked) == (2500, 2499, [])


class ResultLinesChild(FakeChild):
    """A Claude stream: every third stdout line is a result line carrying usage."""

    def __init__(self, count, record):
        self.lines = queue.Queue()
        self.open_streams = 2
        for n in range(count):
            line = cl.result() if n % 3 == 2 else cl.assistant(cl.text(f"step {n}"))
            self.lines.put(record("stdout", line))
        self.lines.put(None)
        self.lines.put(None)


def test_each_posted_batch_carries_the_usage_of_its_own_result_lines_even_when_split(tmp_path):
    spool = Spool.create(tmp_path, SID, "http://server")
    writer = FakeWriter([], limit=2)  # every batch over 2 lines is a 413 and gets split
    child = ResultLinesChild(9, Recorder(spool, 0))
    sender, _ = quiet_sender()
    Pump(writer, SID, spool, child, sender, Batcher(), "claude").run()
    spool.close()
    assert writer.stored == list(range(9))
    for seqs, reports in writer.usage:
        assert reports == [f"line-{seq}" for seq in seqs if seq % 3 == 2]
    assert sorted(r for _, reports in writer.usage for r in reports) == ["line-2", "line-5", "line-8"]


def codex_lines(*events):
    return [{"seq": seq, "stream": "stdout", "data": json.dumps(event)}
            for seq, event in enumerate(events)]


def turn_total(input_tokens, output_tokens):
    return {"type": "turn.completed", "usage": {"input_tokens": input_tokens,
                                                "cached_input_tokens": 0,
                                                "output_tokens": output_tokens}}


def test_codex_running_totals_are_reported_as_each_turns_step():
    lines = codex_lines({"type": "thread.started", "thread_id": "th1"}, turn_total(100, 10),
                        turn_total(250, 30), turn_total(250, 30), turn_total(400, 35))
    reports = usage.Reports("codex")
    made = [reports.report(line) for line in lines]
    assert [(r["input_tokens"], r["output_tokens"]) if r else None for r in made] == [
        None, (100, 10), (150, 20), (0, 0), (150, 5)]
    assert [reports.report(line) for line in lines] == made  # a re-post carries the same reports
    assert sum(r["input_tokens"] for r in made if r) == 400  # the thread's own last total


def test_a_codex_total_below_its_threads_last_is_a_copy_and_reports_nothing():
    reports = usage.Reports("codex")
    lines = codex_lines({"type": "thread.started", "thread_id": "th1"}, turn_total(100, 10),
                        turn_total(60, 4))
    assert reports.report(lines[2 - 1]) is not None and reports.report(lines[2]) is None


def test_a_resumed_runner_steps_from_the_totals_its_spool_already_posted():
    lines = codex_lines({"type": "thread.started", "thread_id": "th1"}, turn_total(100, 10),
                        turn_total(250, 30))
    resumed = usage.Reports("codex")
    resumed.read(lines[:2])  # acknowledged before the crash
    assert (resumed.report(lines[2])["input_tokens"], resumed.report(lines[2])["output_tokens"]) == (150, 20)


def test_other_providers_reports_need_no_history():
    line = {"seq": 3, "stream": "stdout", "data": json.dumps(
        {"type": "result", "stats": {"input_tokens": 20, "output_tokens": 10}})}
    assert usage.Reports("gemini").report(line)["input_tokens"] == 20
    assert usage.Reports("gemini").report({**line, "stream": "stderr"}) is None
