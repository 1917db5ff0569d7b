"""app/formats/fast_json.py: orjson where it gives the stdlib's result, the stdlib elsewhere."""
import dataclasses
import datetime
import enum
import json
import math
import random

import pytest

from app.formats import fast_json
from app.providers import decode as decode_module

STDLIB_COMPACT = json.JSONEncoder(separators=(",", ":")).encode
DEEP = "[" * 100_000 + "]" * 100_000  # past any recursion limit


def outcome(function, *args):
    """What a call gives, comparable across NaN, -0.0 and int/float: repr of its value
    (with the type), or its exception's type and message."""
    try:
        value = function(*args)
    except (ValueError, TypeError, RecursionError) as error:
        return ("raises", type(error), str(error))
    return ("value", type(value), repr(value))


@pytest.mark.parametrize("text", [
    # lone surrogates: escaped, raw, reversed pair; a valid pair stays whole
    '{"a": "\\ud800"}', '{"\\udfff": 1}', '{"a": "x\ud800y"}', '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"', '{"a": "\\u0000"}',
    # non-finite numbers
    "NaN", "Infinity", "-Infinity", '{"a": [NaN, -Infinity]}', "1e400", "-1e400", "1e-400",
    # integers at and past 64 bits
    "9223372036854775807", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
    '{"n": -99999999999999999999999}', "1234567890123456789.5",
    # floats and ints as json.loads types them
    "-0.0", "-0", "0", "1.0", "1", "1E2", "1e-7", "0.1", "5e-324", "1.7976931348623157e308",
    # not an object, not JSON, duplicate keys, whitespace
    "[1, 2]", '"text"', "null", "true", "", " ", "{", '{"a": 1} x', "01", ".5", "1.",
    "\ufeff{}", '{"a": "\x01"}', "{'a': 1}", '{"a": 1, "b": 2, "a": 3}', ' \t\r\n{"a": 1}\n',
    "\x0c{}", "\u00a0{}",
])
def test_loads_gives_what_json_loads_gives(text):
    assert outcome(fast_json.loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize("text", [b'{"a": 1}', '{"a": 1}'.encode("utf-16"), bytearray(b"[1]"),
                                  b"\xff", None, 12])
def test_loads_of_what_is_not_a_str_is_the_stdlibs(text):
    assert outcome(fast_json.loads, text) == outcome(json.loads, text)


def test_loads_of_deep_nesting_raises_recursion_error_as_json_loads_does():
    with pytest.raises(RecursionError):
        fast_json.loads(DEEP)


def test_loads_of_random_fragments_matches_json_loads():
    rng = random.Random(2024)
    alphabet = ["{", "}", "[", "]", ",", ":", '"a"', '"\\ud800"', '"\u00e9"', "1", "-", "0",
                "12345678901234567", "9999", ".5", "e400", "NaN", "null", " ", "1.0", '"\\u0000"']
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert outcome(fast_json.loads, text) == outcome(json.loads, text), text


@dataclasses.dataclass
class Point:
    x: int


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


@pytest.mark.parametrize("value", [
    "\ud800", {"a": "x\udfffy"}, {"\ud800": 1},                  # lone surrogates
    {2: "a", None: "b", True: "c", 1.5: "d"},                   # keys the stdlib turns into str
    2 ** 64, -(2 ** 63) - 1, [10 ** 30],                        # integers past 64 bits
    math.nan, [math.inf], {"a": {"b": (-math.inf, None)}},      # written as NaN, not null
    [Colour.RED], {"k": Name("v")},                             # subclasses, as the stdlib writes them
])
def test_dumps_writes_the_stdlib_text_where_orjson_cannot_write_the_same(value):
    assert fast_json.dumps(value) == STDLIB_COMPACT(value)


def test_dumps_of_deep_nesting_falls_back_to_the_stdlib():
    value = []
    for _ in range(300):  # orjson stops at 254 levels
        value = [value]
    assert fast_json.dumps(value) == STDLIB_COMPACT(value)


@pytest.mark.parametrize("value", [datetime.datetime(2026, 1, 2), Point(1), {1, 2}, object(),
                                   {"a": b"bytes"}, {(1, 2): 3}])
def test_dumps_raises_where_the_stdlib_raised(value):
    with pytest.raises(TypeError):
        STDLIB_COMPACT(value)
    with pytest.raises(TypeError):
        fast_json.dumps(value)


@pytest.mark.parametrize("value", [
    {"a": None, "b": [1, 2.5, -0.0, 1e16, 1e-7, True, False], "c": {"d": "e"}},
    {"text": "caf\u00e9 \u2713 \U0001F600 \u2028 \x7f", "nul": "\x00", "breaks": "a\nb\rc\td"},
    [(1, 2), []], "", 0, 2 ** 64 - 1, -(2 ** 63), 5e-324, 1.7976931348623157e308,
])
def test_dumps_is_compact_json_that_reads_back_to_the_same_value(value):
    text = fast_json.dumps(value)
    assert isinstance(text, str)
    assert outcome(json.loads, text) == outcome(json.loads, STDLIB_COMPACT(value))


def test_dumps_is_compact():
    assert fast_json.dumps({"a": [1, {"b": None}], "c": "d e"}) == '{"a":[1,{"b":null}],"c":"d e"}'


def test_dumps_keeps_each_value_on_one_line_and_nul_escaped():
    """Stored events are one line each (app/formats/event_lines.py); PostgreSQL text
    refuses NUL."""
    text = fast_json.dumps({"t": "a\nb\r\nc\x00", "k\n": "\u00e9"})
    assert "\n" not in text and "\r" not in text and "\x00" not in text
    assert "\u00e9" in text  # non-ASCII is written as it is, not escaped


@pytest.mark.parametrize("text", [
    "", "plain", 'a "quoted" \\ line\n\t\x00\x1f', "caf\u00e9 \u2603 \U0001f600",
    "lone \ud800 surrogate", "\udfff", "null NaN Infinity", '{"type": "result"}',
])
def test_dumps_text_is_what_dumps_writes_for_a_str(text):
    assert fast_json.dumps_text(text) == fast_json.dumps(text)
    assert json.loads(fast_json.dumps_text(text)) == text


LINES = [
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}}',
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "a\\ud800b"}]}}',
    '{"type": "assistant", "message": {"content": [{"type": "text", "text": "a\udfffb"}]}}',
    '{"type": "result", "total_cost_usd": NaN, "usage": {"input_tokens": 1e400}}',
    '{"type": "result", "usage": {"input_tokens": 123456789012345678901234567890}}',
    '{"type": "result", "usage": {"input_tokens": 1.0, "output_tokens": -0.0}}',
    "[1, 2]", "not json", "", "\ud800", "1e999", "9" * 5000,
    '{"type": ' * 150 + "1" + "}" * 150, '{"a": ' * 250 + "1" + "}" * 250,
    '{"a": ' * 1010 + "1" + "}" * 1010, "[" * 100_000 + "]" * 100_000,
]


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_decode_gives_the_same_result_as_with_json_loads(line, monkeypatch):
    fast = outcome(decode_module.decode, line)
    monkeypatch.setattr(fast_json, "loads", json.loads)
    assert fast == outcome(decode_module.decode, line)


@pytest.mark.parametrize("value, found", [
    (math.nan, True), (1.5, False), ("NaN", False), ({"a": [1, (2, {"b": -math.inf})]}, True),
    ({"a": [1, (2, {"b": 1e308})], "c": None}, False), ([[[[math.inf]]]], True), ({}, False),
])
def test_has_non_finite_looks_through_dicts_lists_and_tuples(value, found):
    assert fast_json.has_non_finite(value) is found
