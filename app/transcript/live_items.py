"""Live events of restated items (Codex: item.started, item.updated, item.completed).

Each state carries the item's whole blocks so far. A block seen for the first
time starts; text that grew is sent as a delta (the new suffix, when what was
sent before is still its prefix); the final state completes every block. Only
each block's sent length and a CRC of it are kept, never the text, so a command
whose output grows by 20 KiB per line keeps the live state small. Pure.
"""
import zlib

# The block types of the transcript vocabulary, as the kinds live events name.
KINDS = {"text": "text", "thinking": "thinking", "redacted_thinking": "thinking",
         "tool_use": "tool_use", "server_tool_use": "tool_use", "tool_result": "tool_result",
         "reasoning": "reasoning"}
# The field of each kind whose text grows while the item runs.
GROWING = {"text": "text", "reasoning": "text", "tool_result": "content"}


def item_events(live, event, out):
    """The events of one item state, appended to `out`; `live` is the LiveEvents."""
    items = live.state["items"]
    known = items.get(event.item_id, [])
    blocks = list(event.blocks) + list(event.info.get("provisional_blocks", ()))
    if blocks:
        live.end_run(out)
    final = event.item_done
    for position, block in enumerate(event.blocks if final else blocks):
        kind = KINDS.get(block.get("type"))
        if kind is None:
            continue
        if position >= len(known):
            known.append([live.start_block(kind, block, out), kind, 0, 0])
        block_id = known[position][0]
        if final:
            live.complete_block(block_id, kind, dict(block), out)
        else:
            _grow(live, known[position], _text(kind, block), out)
    if final:
        items.pop(event.item_id, None)
    else:
        items[event.item_id] = known


def _grow(live, entry, text, out):
    sent, crc = entry[2], entry[3]
    if len(text) <= sent or _crc(text[:sent]) != crc:
        return  # nothing new, or rewritten: the final state will say it whole
    live.delta(entry[0], text[sent:], out)
    entry[2], entry[3] = len(text), _crc(text)


def _text(kind, block):
    value = block.get(GROWING.get(kind, ""), "")
    return value if isinstance(value, str) else ""


def _crc(text):
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))
