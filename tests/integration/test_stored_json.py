"""The JSON text ingest stores (app/formats/fast_json.py) on a real database: what the
stdlib wrote or orjson writes, every column reads back to the line's values."""
import json
import math

from tests import claude_lines as cl

# Non-ASCII (written as it is), a lone surrogate escape (U+FFFD once decoded),
# NaN and an integer past 64 bits (both only the stdlib writes as they are).
TEXT = "caf\u00e9 \u2713 \U0001F600 \\ud800"
TOOL_INPUT = {"command": "ls \u00e9", "big": 2 ** 70, "ratio": "NaN-placeholder"}


def odd_assistant_line():
    line = cl.assistant(cl.text(TEXT), cl.tool_use("t1", tool_input=TOOL_INPUT))
    return line.replace('"NaN-placeholder"', "NaN").replace("\\\\ud800", "\\ud800")


def test_odd_values_survive_the_open_turn_the_row_and_the_live_events(new_session, feed,
                                                                       messages, rows):
    sid = new_session()
    feed(sid, [odd_assistant_line()])  # the open turn's parts and header are saved
    raw_parts = [part for (part,) in rows(
        "SELECT part FROM session_turn_parts WHERE session_id = ? ORDER BY part_index", sid)]
    assert "caf\u00e9 \u2713 \U0001F600 \ufffd" in raw_parts[0]  # UTF-8, not escaped
    assert json.loads(raw_parts[0])["text"] == "caf\u00e9 \u2713 \U0001F600 \ufffd"
    feed(sid, [cl.result()])

    [row] = messages(sid)
    text_block, tool_block = row["content_blocks"]
    assert text_block["text"] == "caf\u00e9 \u2713 \U0001F600 \ufffd"
    assert tool_block["input"]["command"] == "ls \u00e9"
    assert tool_block["input"]["big"] == 2 ** 70
    assert math.isnan(tool_block["input"]["ratio"])
    [(raw,)] = rows("SELECT content_blocks FROM session_messages WHERE session_id = ?", sid)
    assert "NaN" in raw and str(2 ** 70) in raw  # not null, not a float

    events = rows("SELECT live_events FROM remote_runtime_outputs WHERE session_id = ?"
                  " AND live_events IS NOT NULL ORDER BY event_index", sid)
    stored = [line for (text,) in events for line in text.split("\n")]
    assert stored and all(" " in line for line in stored)
    for line in stored:
        json.loads(line.split(" ", 1)[1])  # each event's data is one line of JSON
