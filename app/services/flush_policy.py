"""Flush policy: what a closed turn leaves in the transcript, by session kind.

Pure: it reads `Turn`s and `SystemNote`s and answers with `MessageDraft`s (or
None); it neither parses lines nor touches storage.

| kind        | visible text | block-only turn        | user tool_result          |
|-------------|--------------|------------------------|---------------------------|
| ordinary    | one row      | nothing                | ignored                   |
| autonomous  | one row      | one row, content ""    | folded into content_blocks |
"""
from dataclasses import dataclass

from app.services.accumulator import SystemNote

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
        """The row for whatever the accumulator produced: a Turn or a SystemNote."""
        if isinstance(outcome, SystemNote):
            return self.draft_for_system(outcome)
        return self.draft_for_turn(outcome)

    def draft_for_turn(self, turn):
        """The assistant row a closed turn deserves, or None."""
        blocks = [
            block
            for block in turn.blocks
            if self.folds_tool_results or block.get("type") != "tool_result"
        ]
        if not turn.has_visible_text and not (blocks and self.keeps_block_only_turns):
            return _failure_note(turn) if turn.result.get("is_error") else None
        metadata = {
            "content_blocks": blocks,
            "turn_id": turn.key,
            "terminal_reason": turn.terminal_reason,
            "message_ids": list(turn.message_ids),
            "trigger": turn.trigger,
            "event_range": [turn.first_event_index, turn.last_event_index],
        }
        if turn.result:
            metadata["result"] = {k: v for k, v in turn.result.items() if k != "result"}
        if turn.usage:
            metadata["usage"] = turn.token_usage
        content = turn.text if turn.has_visible_text else ""
        return MessageDraft("assistant", content, blocks, metadata, turn.key)

    def draft_for_system(self, note):
        """A system row for a system line that says something; empty ones are skipped."""
        if not note.text.strip():
            return None
        metadata = {"subtype": note.subtype} if note.subtype else {}
        return MessageDraft("system", note.text, [], metadata, note.key)


def _failure_note(turn):
    """A failed turn with nothing visible still tells the reader why it stopped."""
    reason = turn.result.get("subtype") or "error"
    detail = turn.result.get("result") or ""
    text = f"Turn failed ({reason})" + (f": {detail}" if detail else "")
    metadata = {"turn_id": turn.key, "terminal_reason": turn.terminal_reason,
                "result": {k: v for k, v in turn.result.items() if k != "result"}}
    return MessageDraft("system", text, [], metadata, turn.key)


ORDINARY = FlushPolicy("ordinary", keeps_block_only_turns=False, folds_tool_results=False)
AUTONOMOUS = FlushPolicy("autonomous", keeps_block_only_turns=True, folds_tool_results=True)


def policy_for(session_type, context):
    """The policy that governs a session."""
    return AUTONOMOUS if is_autonomous(session_type, context) else ORDINARY
