"""Flush policy: what a closed turn leaves in the transcript, by session kind.

Pure: it reads `TranscriptTurn`s and `SystemNote`s and answers with
`MessageDraft`s (or None); it neither parses lines nor touches storage, and it
sees every provider's turns in the same normalized shape.

| kind        | visible text | block-only turn        | user tool_result          |
|-------------|--------------|------------------------|---------------------------|
| ordinary    | one row      | nothing                | ignored                   |
| autonomous  | one row      | one row, content ""    | folded into content_blocks |

A prompt the agent took (UserPrompt) is one `role=user` row under both policies.
An interrupted turn's row says `"interrupted": true` in its metadata; a block-only
interrupted turn is kept or not like any block-only turn.
"""
from dataclasses import dataclass

from app.transcript.turns import SystemNote
from app.transcript.turns import UserPrompt

REMOTE_LIVE = "remote_live"
SESSION_TYPES = ("chat", "agent", "terminal", "workflow")


@dataclass(frozen=True)
class MessageDraft:
    """A transcript row that the policy wants written (once, keyed by `turn_key`)."""

    role: str
    content: str
    content_blocks: list
    metadata: dict
    turn_key: str
    source: str = REMOTE_LIVE


def is_autonomous(session_type, context):
    """Autonomous = a workflow session that names its workflow; derived, never stored."""
    return session_type == "workflow" and bool((context or {}).get("workflow_id"))


@dataclass(frozen=True)
class FlushPolicy:
    """What one kind of session (ordinary or autonomous) keeps of a closed turn."""

    name: str
    keeps_block_only_turns: bool
    folds_tool_results: bool

    def draft(self, outcome):
        """The row for a TranscriptTurn, a SystemNote or a UserPrompt, or None."""
        if isinstance(outcome, SystemNote):
            return self.draft_for_system(outcome)
        if isinstance(outcome, UserPrompt):
            return draft_for_prompt(outcome)
        return self.draft_for_turn(outcome)

    def draft_for_turn(self, turn):
        """The assistant row a closed `TranscriptTurn` deserves, or None.

        The row's `content` is the visible text; its `content_blocks` are every
        block it keeps, text included, in arrival order, so a reader can show
        text, a tool call and its result in the order they happened.
        """
        blocks = [
            block
            for block in turn.content_blocks
            if self.folds_tool_results or block.get("type") != "tool_result"
        ]
        has_other_blocks = any(block.get("type") != "text" for block in blocks)
        if not turn.has_visible_text and not (has_other_blocks and self.keeps_block_only_turns):
            return _failure_note(turn) if turn.failed else None
        metadata = {
            "content_blocks": blocks,
            **_turn_facts(turn),
            "message_ids": list(turn.message_ids),
            "trigger": turn.trigger,
            "event_range": list(turn.event_range),
        }
        if turn.result:
            metadata["result"] = _result_fields(turn)
        if turn.usage:
            metadata["usage"] = dict(turn.usage)
        content = turn.visible_text if turn.has_visible_text else ""
        return MessageDraft(turn.role, content, blocks, metadata, turn.turn_id)

    def draft_for_system(self, note):
        """A system row for a system line that says something; empty ones are skipped."""
        if not note.text.strip():
            return None
        metadata = {"subtype": note.subtype} if note.subtype else {}
        return MessageDraft("system", note.text, [], metadata, note.key)


def draft_for_prompt(prompt):
    """The user row of a prompt the agent took, under every policy: keyed by its uuid,
    so an echo seen again writes nothing."""
    metadata = {"uuid": prompt.uuid, "event_index": prompt.event_index,
                "received_at": prompt.received_at}
    return MessageDraft("user", prompt.text, [], metadata, prompt.key)


def _failure_note(turn):
    """A failed turn with nothing visible still tells the reader why it stopped."""
    reason = turn.result.get("subtype") or "error"
    detail = turn.result.get("result") or ""
    text = f"Turn failed ({reason})" + (f": {detail}" if detail else "")
    metadata = {**_turn_facts(turn), "result": _result_fields(turn)}
    return MessageDraft("system", text, [], metadata, turn.turn_id)


def _turn_facts(turn):
    """What every row written for a turn says about it."""
    facts = {"turn_id": turn.turn_id, "terminal_reason": turn.terminal_reason,
             "started_at": turn.started_at, "completed_at": turn.completed_at}
    if turn.interrupted:
        facts["interrupted"] = True
    return facts


def _result_fields(turn):
    """The result's fields, without its text (the row's content already says it)."""
    return {k: v for k, v in turn.result.items() if k != "result"}


ORDINARY = FlushPolicy("ordinary", keeps_block_only_turns=False, folds_tool_results=False)
AUTONOMOUS = FlushPolicy("autonomous", keeps_block_only_turns=True, folds_tool_results=True)


def policy_for(session_type, context):
    """The policy that governs a session."""
    return AUTONOMOUS if is_autonomous(session_type, context) else ORDINARY
