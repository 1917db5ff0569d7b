"""Live events of Claude's partial messages (`--include-partial-messages`).

A streamed block starts at its `content_block_start` (or its first delta) and grows
with each delta; it is completed by the complete `assistant` line that follows,
which carries the block whole: that line's first block of the same kind (and
message) takes the streamed block's id. Pure.
"""
from app.transcript.live_items import KINDS


def streamed_events(live, partial, out):
    """A message begins, a block starts, a block grows (`partial` from the parser)."""
    state = live.state
    if partial["op"] == "message":
        state["message_id"] = partial.get("message_id")
        return
    starting = partial["op"] == "start"
    kind = KINDS.get(partial["block"].get("type")) if starting else partial["type"]
    block_id = None if starting else _streamed_at(state, partial["index"])
    if block_id is None:
        if kind is None:
            return
        block_id = live.start_block(kind, partial.get("block", {}), out)
        state["streamed"].append([partial["index"], block_id, kind, state.get("message_id")])
    if not starting:
        live.delta(block_id, partial["text"], out)


def take_streamed(live, kind, message_id):
    """The id of the first streamed block of this kind (and message) still waiting for
    its whole line, which has come now; None when there is none."""
    streamed = live.state["streamed"]
    for n, (_, block_id, streamed_kind, owner) in enumerate(streamed):
        if streamed_kind == kind and (owner is None or message_id in (None, owner)):
            del streamed[n]
            return block_id
    return None


def _streamed_at(state, index):
    message_id = state.get("message_id")
    for at, block_id, _, owner in reversed(state["streamed"]):
        if at == index and owner == message_id:
            return block_id
    return None
