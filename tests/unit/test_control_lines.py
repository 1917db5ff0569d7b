"""The control channel's lines, as each provider's parser reads them, and what ingest
folds from them (fakes only): prompt echoes become user rows and apply their inputs,
permission requests are recorded and announced, interrupted turns say so.

The Claude lines are a real capture (tests/fixtures/interactive, Claude Code 2.1.328
driven with --input-format stream-json --permission-prompt-tool stdio
--replay-user-messages against a fake Messages API).
"""
import json
from datetime import datetime
from datetime import timezone
from pathlib import Path

import pytest

from app.core.inputs import input_uuid
from app.core.records import Chunk
from app.providers import REGISTRY
from app.providers import claude
from app.services import evidence as evidence_service
from app.services import ingest
from app.transcript import event_types as ev
from app.transcript.accumulator import Accumulator
from app.transcript.flush_policy import AUTONOMOUS
from app.transcript.flush_policy import ORDINARY
from app.transcript.open_turn import OpenTurn
from app.transcript.transcript_turn import TranscriptTurn
from app.transcript.turns import Turn
from app.transcript.turns import UserPrompt
from tests.fakes import FakeUnitOfWork

INTERACTIVE = Path(__file__).resolve().parents[1] / "fixtures" / "interactive"
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
STAMP = "2026-03-04T05:06:07.000000Z"


def capture(name):
    return (INTERACTIVE / f"{name}.jsonl").read_text().splitlines()


def kinds(lines):
    """The type of each line and what claude's parser made of it."""
    out = []
    for line in lines:
        event = claude.parse_line(line)
        out.append((json.loads(line)["type"], event.kind,
                    (event.info.get("control") or {}).get("op")))
    return out


# Parsers

def test_a_replayed_prompt_is_a_prompt_event_with_its_uuid_and_text():
    lines = capture("claude_permissions")
    echoes = [claude.parse_line(line) for line in lines if '"isReplay":true' in line]
    assert [(e.kind, e.identity, e.text) for e in echoes] == [
        (ev.USER_PROMPT, "11111111-1111-4111-8111-111111111111", "say hello"),
        (ev.USER_PROMPT, "22222222-2222-4222-8222-222222222222", "TOOL please"),
        (ev.USER_PROMPT, "33333333-3333-4333-8333-333333333333", "SLOW reply"),
        (ev.USER_PROMPT, "44444444-4444-4444-8444-444444444444", "TOOL again"),
        (ev.USER_PROMPT, "55555555-5555-4555-8555-555555555555", "say bye"),
    ]


def test_text_blocks_make_a_prompt_and_other_user_lines_do_not():
    blocks = {"type": "user", "isReplay": True, "uuid": "u1", "message": {
        "role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}
    event = claude.parse_line(json.dumps(blocks))
    assert (event.kind, event.text) == (ev.USER_PROMPT, "a\n\nb")
    not_replayed = dict(blocks, isReplay=False)
    assert claude.parse_line(json.dumps(not_replayed)).kind == ev.IGNORED
    interrupted = '{"type":"user","message":{"role":"user","content":[{"type":"text",' \
                  '"text":"[Request interrupted by user]"}]}}'
    assert claude.parse_line(interrupted).kind == ev.IGNORED  # the CLI's note, not a prompt
    no_uuid = dict(blocks)
    del no_uuid["uuid"]
    assert claude.parse_line(json.dumps(no_uuid)).kind == ev.IGNORED


def test_permission_lines_of_the_real_capture():
    seen = [k for k in kinds(capture("claude_permissions"))
            if k[0] in ("control_request", "control_cancel_request", "control_response",
                        "command_lifecycle")]
    assert ("control_request", ev.IGNORED, "permission_request") in seen
    assert ("control_cancel_request", ev.IGNORED, "permission_withdrawn") in seen
    assert {k for k in seen if k[0] in ("control_response", "command_lifecycle")} == {
        ("control_response", ev.IGNORED, None), ("command_lifecycle", ev.IGNORED, None)}
    request = next(claude.parse_line(line) for line in capture("claude_permissions")
                   if '"can_use_tool"' in line)
    control = request.info["control"]
    assert control["tool_name"] == "Bash"
    assert control["input"] == {"command": "touch made.txt", "description": "make a file"}


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_every_provider_reads_the_neutral_lines(provider):
    parse = REGISTRY[provider]
    user = parse('{"type": "turnlog.user", "uuid": "u9", "content": "hi"}')
    assert (user.kind, user.identity, user.text) == (ev.USER_PROMPT, "u9", "hi")
    request = parse('{"type": "turnlog.permission_request", "request_id": "R",'
                    ' "tool_name": "Bash", "input": {"command": "ls"}}')
    assert request.info["control"] == {"op": "permission_request", "request_id": "R",
                                       "tool_name": "Bash", "input": {"command": "ls"}}
    withdrawn = parse('{"type": "turnlog.permission_withdrawn", "request_id": "R"}')
    assert withdrawn.info["control"] == {"op": "permission_withdrawn", "request_id": "R"}
    resolved = parse('{"type": "turnlog.permission_resolved", "request_id": "R", "state":'
                     ' "expired", "behavior": "deny", "message": null, "resolved_by":'
                     ' "server", "resolved_at": "t"}')
    assert resolved.info["control"]["state"] == "expired"
    interrupted = parse('{"type": "turnlog.interrupted"}')
    assert interrupted.kind == ev.RESULT
    assert interrupted.info["terminal_reason"] == "aborted_streaming"


# The fold

def text_event(text, identity):
    return ev.StreamEvent(ev.ASSISTANT, ({"type": "text", "text": text},), identity, "m1")


def tool_event(identity):
    return ev.StreamEvent(ev.ASSISTANT, ({"type": "tool_use", "id": "t1", "name": "Bash",
                                          "input": {}},), identity, "m1")


def prompt(uuid="u1"):
    return ev.StreamEvent(ev.USER_PROMPT, identity=uuid, text="next", info={"uuid": uuid})


def test_a_prompt_flushes_an_open_turn_with_text_first():
    acc = Accumulator()
    acc.feed(text_event("before", "a1"), 0)
    out = acc.feed(prompt(), 1)
    assert [type(o) for o in out] == [Turn, UserPrompt]
    assert out[0].trigger == "prompt" and out[1].key == "user:u1"
    assert acc.buffer.is_empty()


def test_a_prompt_leaves_a_block_only_turn_open_and_text_saved_earlier_counts():
    acc = Accumulator()
    acc.feed(tool_event("a1"), 0)
    assert [type(o) for o in acc.feed(prompt(), 1)] == [UserPrompt]
    assert not acc.buffer.is_empty()  # the tool call goes on into the turn after the prompt
    saved = Accumulator()
    saved.feed(text_event("said", "a2"), 0)
    saved.take_unsaved_parts()  # the text is saved, not in memory
    saved.load_saved_parts = lambda: [{"type": "text", "text": "said"}]
    assert [type(o) for o in saved.feed(prompt("u2"), 1)] == [Turn, UserPrompt]


@pytest.mark.parametrize("policy, expected", [
    (ORDINARY, [("user", "next"), ("assistant", "after")]),
    (AUTONOMOUS, [("user", "next"), ("assistant", "after")]),
])
def test_a_block_only_open_turn_goes_on_after_the_prompt_under_each_policy(policy, expected):
    """The prompt's row comes first; the tool call before it lands in the row of the text
    that ends the turn (under both policies: neither drops the call); a turn that ends
    block-only is no row under the ordinary policy and a row of its own under the
    autonomous one, as any block-only turn."""
    turn = OpenTurn(policy=policy)
    drafts = []
    for index, event in enumerate([tool_event("a1"), prompt(), text_event("after", "a2"),
                                   ev.StreamEvent(ev.RESULT, identity="r1")]):
        drafts.extend(d for d in turn.feed(event, index, STAMP).drafts if d is not None)
    assert [(d.role, d.content) for d in drafts] == expected
    assert [b["type"] for b in drafts[1].content_blocks] == ["tool_use", "text"]
    blocks_only = OpenTurn(policy=policy)
    kept = []
    for index, event in enumerate([prompt("u2"), tool_event("a3"),
                                   ev.StreamEvent(ev.RESULT, identity="r2")]):
        kept.extend(d for d in blocks_only.feed(event, index, STAMP).drafts if d is not None)
    assert [d.role for d in kept] == (["user"] if policy is ORDINARY else ["user", "assistant"])


def test_an_interrupted_turn_says_so_in_its_row_and_live_event():
    lines = capture("claude_interrupt")
    uow = session(uow=None)
    post(uow, lines)
    rows = [m for m in uow.messages.rows if m.role == "assistant"]
    assert rows[0].metadata["interrupted"] is True
    assert rows[0].metadata["terminal_reason"] == "interrupted"
    assert "interrupted" not in rows[1].metadata
    completed = [e for e in live(uow) if e[0] == "turn.completed"]
    assert [e[1].get("interrupted") for e in completed] == [True, None]


def test_an_interrupted_block_only_turn_is_kept_out_by_the_ordinary_policy():
    turn = TranscriptTurn.from_turn(Turn(
        key="turn:x", parts=({"type": "tool_use", "id": "t"},), message_ids=(),
        first_event_index=0, last_event_index=1, trigger="result",
        result={"terminal_reason": "aborted_tools", "is_error": False}))
    assert turn.interrupted
    assert ORDINARY.draft(turn) is None
    assert AUTONOMOUS.draft(turn).metadata["interrupted"] is True


# Ingest with fakes

def session(uow=None, provider="claude"):
    uow = uow or FakeUnitOfWork()
    uow.sessions.add("s1", None, "agent", {}, provider, "2026-01-01T00:00:00.000000Z")
    return uow


def post(uow, lines, start=0, **kwargs):
    chunks = [Chunk(line, "stdout", start + n) for n, line in enumerate(lines)]
    return ingest.ingest_output("s1", chunks, uow, retention_seconds=60, clock=lambda: NOW,
                                **kwargs)


def live(uow):
    events = []
    for _, text in sorted(uow.outputs.live.items()):
        for line in (text or "").split("\n"):
            if line:
                name, data = line.split(" ", 1)
                events.append((name, json.loads(data)))
    return events


def test_the_capture_makes_user_rows_where_the_agent_took_each_prompt():
    uow = session()
    lines = capture("claude_permissions")
    receipt = post(uow, lines)
    roles = [(m.role, m.content) for m in uow.messages.rows if m.role != "system"]
    assert roles == [
        ("user", "say hello"), ("assistant", "Hello from the fake."),
        ("user", "TOOL please"), ("assistant", "Done with the tool."),
        ("user", "SLOW reply"), ("assistant", "slow " * 40),
        ("user", "TOOL again"),  # its turn was interrupted at the permission: block-only
        ("user", "say bye"), ("assistant", "Hello from the fake."),
    ]
    user = next(m for m in uow.messages.rows if m.role == "user")
    assert user.turn_key == "user:11111111-1111-4111-8111-111111111111"
    assert user.source == "remote_live"
    assert receipt.messages_written == len(uow.messages.rows)
    assert uow.sessions.get("s1").message_count == len(uow.messages.rows)
    again = post(uow, lines, start=len(lines))  # the stream re-sent under new seqs
    assert again.messages_written == 0 and len(uow.messages.rows) == receipt.messages_written


def test_an_echo_naming_an_input_applies_it_and_one_naming_none_is_a_row_still():
    uow = session()
    queued = uow.inputs.add_if_new("s1", "c1", "hello", "alice", STAMP)
    uuid = input_uuid("s1", queued.input_id)
    post(uow, [json.dumps({"type": "turnlog.user", "uuid": uuid, "content": "hello"}),
               json.dumps({"type": "turnlog.user", "uuid": "runner-own", "content": "first"})])
    assert uow.inputs.rows[0].state == "applied"
    assert uow.inputs.rows[0].applied_at == STAMP
    assert [m.turn_key for m in uow.messages.rows] == [f"user:{uuid}", "user:runner-own"]
    assert uow.sessions.get("s1").message_count == 2


def test_permissions_are_recorded_withdrawn_and_announced_once():
    uow = session()
    lines = capture("claude_permissions")
    post(uow, lines)
    rows = sorted(uow.permissions.rows.values(), key=lambda p: p.event_index)
    assert [(p.tool_name, p.state) for p in rows] == [("Bash", "pending"), ("Bash", "cancelled")]
    assert rows[0].expires_at == "2026-03-04T05:16:07.000000Z"  # 600 s after it came
    assert rows[1].resolved_by == "agent"
    assert lines[rows[0].event_index].startswith('{"type":"control_request"')
    names = [(name, data["request_id"]) for name, data in live(uow) if name.startswith("perm")]
    assert names == [("permission.requested", rows[0].request_id),
                     ("permission.requested", rows[1].request_id),
                     ("permission.resolved", rows[1].request_id)]
    post(uow, lines, start=len(lines))  # re-sent: nothing new is announced
    assert len([n for n, _ in live(uow) if n.startswith("perm")]) == 3


def test_a_zero_timeout_never_expires_and_only_a_stored_resolution_is_announced():
    uow = session(provider="codex")
    post(uow, ['{"type": "turnlog.permission_request", "request_id": "R", "tool_name": "x",'
               ' "input": {}}',
               '{"type": "turnlog.permission_resolved", "request_id": "R", "state": "allowed",'
               ' "behavior": "allow", "message": null, "resolved_by": "alice",'
               ' "resolved_at": "t1"}'], permission_timeout_seconds=0)
    assert uow.permissions.rows[("s1", "R")].expires_at is None
    assert [name for name, _ in live(uow)] == ["permission.requested"]  # a forged answer
    assert uow.permissions.rows[("s1", "R")].state == "pending"
    uow.permissions.resolve_if_pending("s1", "R", "allowed", "ok", "alice", "t1")
    post(uow, ['{"type": "turnlog.permission_resolved", "request_id": "R", "state": "denied"}'],
         start=2)
    assert live(uow)[-1] == ("permission.resolved", {
        "request_id": "R", "state": "allowed", "behavior": "allow", "message": "ok",
        "resolved_by": "alice", "resolved_at": "t1"})  # as stored, not as the line says


def test_backfilled_evidence_names_the_turns_a_prompt_split():
    """A prompt injected into a turn that said something splits it at ingest; the
    evidence backfill, which reads shell blocks only, splits it at the same line, so its
    commands name the turns the session stored."""
    bash = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "b1", "content": "a.txt"}
    lines = [
        json.dumps({"type": "assistant", "uuid": "a1", "message": {
            "id": "m1", "content": [{"type": "text", "text": "Looking."}]}}),
        json.dumps({"type": "user", "isReplay": True, "uuid": "p1",
                    "message": {"role": "user", "content": "and list the files"}}),
        json.dumps({"type": "assistant", "uuid": "a2", "message": {"id": "m2", "content": [bash]}}),
        json.dumps({"type": "user", "uuid": "r1", "message": {"content": [result]}}),
        json.dumps({"type": "result", "uuid": "z1", "subtype": "success"}),
    ]
    uow = session()
    post(uow, lines)
    stored = [(row.turn_id, row.command) for row in uow.evidence.rows]
    assert stored and stored[0][1] == "ls"
    uow.evidence.rows = []
    assert evidence_service.backfill(uow, clock=lambda: NOW) == 1
    assert [(row.turn_id, row.command) for row in uow.evidence.rows] == stored
