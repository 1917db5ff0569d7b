"""Live events: what each line adds to the open turn, in one provider-neutral vocabulary.

Ingest calls `LiveEvents.for_line` with every line's `StreamEvent` (the one the
accumulator was fed: no second parser) and the turn it fed, and stores the
result with the line; `/events` replays what was stored. The open live turn is a
small JSON state stored with the open turn (open_turn.py), so a restart or another
worker continues it. Pure. Events are (name, data) pairs; `event_codec.py` stores them.
"""
from app.transcript import event_types as ev
from app.transcript.live_items import KINDS
from app.transcript.live_items import item_events
from app.transcript.live_streamed import streamed_events
from app.transcript.live_streamed import take_streamed
from app.transcript.usage import token_totals

PROCESS_EXIT = "process_exit"


class LiveEvents:
    """The open live turn: its id, its block ordinals and the blocks still growing.

    `state` is None between turns, else {"turn_id", "started_at", "event_index",
    "blocks" (next ordinal), "message_id" (Claude's streaming message), "streamed"
    ([index, block id, kind, message id] of streamed blocks whose whole line has
    not come yet), "run" ([block id, text] of a Gemini delta run), "items"
    (Codex item id -> its blocks' [block id, kind, length, crc]), "usage"}.
    """

    def __init__(self, state=None):
        self.state = state

    @classmethod
    def from_stored(cls, data):
        """From what `stored()` gave (a stored open turn's "live", open_turn.py), read
        by name: a field it lacks takes its default, one unknown here is dropped."""
        if not data:
            return cls()
        return cls({
            "turn_id": data["turn_id"],
            "started_at": data.get("started_at"),
            "event_index": data.get("event_index"),
            "blocks": data.get("blocks", 0),
            "message_id": data.get("message_id"),
            "streamed": data.get("streamed", []),
            "run": data.get("run"),
            "items": data.get("items", {}),
            "usage": data.get("usage", {}),
        })

    def stored(self):
        """The open live turn as stored (None between turns); `_open` writes its fields."""
        return self.state

    @property
    def turn_id(self):
        return self.state["turn_id"] if self.state else None

    def for_line(self, event, event_index, received_at, buffer, closed=None, usage_changed=True):
        """The events of one line the accumulator took (not a re-sent copy): `buffer`
        is the open turn after it, `closed` the TranscriptTurn it closed, if any.
        `usage_changed` False (the accumulator kept the turn's usage as it was) spares
        summing it again: the totals the live turn holds stand."""
        out = []
        partial = event.info.get("partial") if event.kind == ev.IGNORED else None
        if partial:
            self._open(event_index, received_at, buffer, out)
            streamed_events(self, partial, out)
        elif event.info.get("message_usage") and self.state is not None:
            self._usage(token_totals(buffer.message_usage()), out)  # a message's final counts
        elif event.kind == ev.TURN_STARTED:
            self._open(event_index, received_at, buffer, out)
            self.state["items"] = {}  # item ids start afresh, as in the accumulator
        elif event.kind in (ev.ASSISTANT, ev.TOOL_RESULTS):
            self._open(event_index, received_at, buffer, out)
            if event.item_id:
                item_events(self, event, out)
            else:
                for block in event.blocks:
                    self.add_block(block, event.message_id, out)
            if ((usage_changed or not self.state["usage"])  # else the totals stay
                    and (event.info.get("usage") or event.info.get("turn_usage"))):
                self._usage(token_totals(buffer.message_usage()), out)
        if closed is not None and not (closed.is_empty and self.state is None):
            self._open(_first_line(closed, event_index), closed.started_at or received_at,
                       None, out)
            self._close(closed, out)
        return out

    def for_completion(self, closed, status, exit_code):
        """The events of process completion: the open turn closes, then the session."""
        out = []
        if closed is not None or self.state is not None:
            if self.state is None:
                self._open(_first_line(closed, 0), closed.started_at, None, out)
            self._close(closed, out)
        out.append(("session.completed", {"status": status, "exit_code": exit_code}))
        return out

    # The pieces, also used by live_items.py.

    def add_block(self, block, message_id, out):
        """A block from a line: a Gemini delta grows the run, a streamed block is
        completed, any other starts and completes here."""
        kind = KINDS.get(block.get("type"))
        if kind is None:
            return
        if kind == "text" and block.get("delta") is True:
            self._grow_run(block["text"], out)
            return
        self.end_run(out)
        block_id = take_streamed(self, kind, message_id) or self.start_block(kind, block, out)
        self.complete_block(block_id, kind, block, out)  # encoded in this request, unchanged

    def start_block(self, kind, block, out):
        """Announce a new block; returns its id (its ordinal in the turn)."""
        block_id = f"b{self.state['blocks']}"
        self.state["blocks"] += 1
        data = {"turn_id": self.turn_id, "block_id": block_id, "kind": kind}
        if kind == "tool_use":
            data.update(tool_name=block.get("name"), call_id=block.get("id"))
        elif kind == "tool_result":
            data["call_id"] = block.get("tool_use_id")
        if block.get("parent_tool_use_id"):  # a sub-agent's block, under its Task call
            data["parent_tool_use_id"] = block["parent_tool_use_id"]
        out.append(("block.started", data))
        return block_id

    def delta(self, block_id, text, out):
        out.append(("block.delta", {"turn_id": self.turn_id, "block_id": block_id, "text": text}))

    def complete_block(self, block_id, kind, block, out):
        out.append(("block.completed", {"turn_id": self.turn_id, "block_id": block_id,
                                        "kind": kind, "block": block}))

    def end_run(self, out):
        """A Gemini delta run ends: its joined text is one block, as in the transcript."""
        run = self.state.get("run")
        if run:
            self.state["run"] = None
            self.complete_block(run[0], "text", {"type": "text", "text": run[1]}, out)

    def _grow_run(self, text, out):
        if not self.state.get("run"):
            self.state["run"] = [self.start_block("text", {}, out), ""]
        self.state["run"][1] += text
        self.delta(self.state["run"][0], text, out)

    def _open(self, event_index, received_at, buffer, out):
        """Start the live turn unless one is open. A turn the accumulator began before
        there were live events is named by its first line, as `open_turn` names it."""
        if self.state is not None:
            return
        first = getattr(buffer, "first_event_index", None)
        index = first if first is not None else event_index
        started_at = getattr(buffer, "started_at", None) or received_at
        self.state = {"turn_id": f"t{index}", "started_at": started_at, "event_index": index,
                      "blocks": 0, "message_id": None, "streamed": [], "run": None,
                      "items": {}, "usage": {}}
        out.append(("turn.started", {"turn_id": self.turn_id, "started_at": started_at,
                                     "event_index": index}))

    def _usage(self, usage, out):
        if usage and usage != self.state["usage"]:
            self.state["usage"] = dict(usage)
            out.append(("usage", {"turn_id": self.turn_id, "usage": dict(usage)}))

    def _close(self, closed, out):
        self.end_run(out)
        usage = closed.usage if closed else {}
        self._usage(usage, out)
        data = {
            "turn_id": self.turn_id,
            "terminal_reason": closed.terminal_reason if closed else PROCESS_EXIT,
            "usage": usage or dict(self.state["usage"]),
            "message_id": None,  # filled in once the row is written (event_codec.encode)
            "transcript_turn_id": closed.turn_id if closed else None,
        }
        if closed is not None and closed.interrupted:
            data["interrupted"] = True
        out.append(("turn.completed", data))
        self.state = None


def _first_line(closed, default):
    first = closed.event_range[0]
    return first if first is not None else default
