"""Property-based bad input to every write endpoint (hypothesis).

Random and malformed stdout lines, wrong JSON types at every field, unknown and
missing fields, huge and empty bodies, invalid UTF-8 and wrong content types.
Never a 5xx; every 4xx is the documented error envelope; and what was accepted
before a request (transcript rows, buffered output, the session's counters) is
unchanged after it: entirely after a refusal, row for row after an acceptance.
"""
import json

import pytest

from tests.extras import require

require("hypothesis")

from hypothesis import HealthCheck  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests import claude_lines as cl  # noqa: E402
from tests import figures  # noqa: E402
from tests.api import create_session  # noqa: E402
from tests.api import post_lines  # noqa: E402

SESSIONS = "/api/remote/sessions"
MAX_BODY = 16384
MAX_LINE = 1000
MAX_CHUNKS = 4
TALLY = {"tried": 0, "server_errors": 0, "accepted_rows_changed": 0}
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6,
)
# A valid body per endpoint: the mutations below break one thing in it.
TEMPLATES = {
    "": {"session_type": "agent", "context": {}, "user_id": "u", "provider": "claude",
         "machine": "m"},
    "output": {"chunks": [{"seq": 10_000, "stream": "stdout", "data": "x"}]},
    "complete": {"exit_code": 0},
    "usage": {"report_id": "r-new", "input_tokens": 1, "output_tokens": 1, "requests": 1},
}
CONTENT_TYPES = ["application/json", "text/plain", "application/octet-stream",
                 "application/x-www-form-urlencoded", None]


@pytest.fixture
def app_config():
    # Small limits, so that bodies and lines over them stay cheap to build.
    return {"AUTH_DISABLED": True, "MAX_CONTENT_LENGTH": MAX_BODY,
            "MAX_LINE_LENGTH": MAX_LINE, "MAX_CHUNKS_PER_REQUEST": MAX_CHUNKS}


@pytest.fixture
def accepted(client):
    """A session with a transcript row, buffered output and a counted usage report."""
    sid = create_session(client)
    lines = [cl.assistant(cl.text("accepted before")), cl.result()]
    assert post_lines(client, sid, lines).status_code == 200
    usage = client.post(f"{SESSIONS}/{sid}/usage", json={"report_id": "r1", "requests": 2})
    assert usage.status_code == 200
    return sid


@pytest.fixture
def snapshot(rows):
    def take():
        return {
            "sessions": rows("SELECT * FROM agent_sessions ORDER BY session_id"),
            "messages": rows("SELECT * FROM session_messages ORDER BY id"),
            "outputs": rows("SELECT * FROM remote_runtime_outputs"
                            " ORDER BY session_id, event_index"),
        }
    return take


@st.composite
def mutated_bodies(draw, template):
    """The template with one field of a wrong type, missing, or an unknown one added;
    a chunk of the wrong shape; or any JSON value at all."""
    body = json.loads(json.dumps(template))
    kind = draw(st.sampled_from(["wrong_type", "missing", "unknown", "chunk", "any"]))
    if kind == "any":
        return draw(json_values)
    if kind == "chunk" and "chunks" in body:
        chunk = body["chunks"][0]
        field = draw(st.sampled_from(sorted(chunk)))
        chunk[field] = draw(json_values.filter(lambda v: not isinstance(v, str)))
        return body
    field = draw(st.sampled_from(sorted(body)))
    if kind == "missing":
        del body[field]
    elif kind == "unknown":
        body[draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in body))] = 1
    else:
        body[field] = draw(json_values.filter(lambda v: type(v) is not type(body[field])))
    return body


def encoded(body):
    return json.dumps(body).encode()


raw_bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=64),  # mostly invalid UTF-8
    st.binary(max_size=16).map(lambda b: b'{"chunks": [{"data": "' + b + b'"}]}'),
    st.integers(MAX_BODY + 1, 4 * MAX_BODY).map(lambda n: b"x" * n),
    st.integers(MAX_BODY, 2 * MAX_BODY).map(
        lambda n: encoded({"chunks": [{"seq": 1, "data": "y" * n}]})),
    st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
)
over_limits = st.sampled_from([
    encoded({"chunks": [{"seq": 20_000, "data": "z" * (MAX_LINE + 1)}]}),
    encoded({"chunks": [{"seq": 20_000 + i, "data": "z"} for i in range(MAX_CHUNKS + 1)]}),
    encoded({"chunks": []}),
])


def requests():
    """(endpoint, body bytes, content type)."""
    endpoints = st.sampled_from(sorted(TEMPLATES))
    mutated = endpoints.flatmap(lambda e: st.tuples(
        st.just(e), mutated_bodies(TEMPLATES[e]).map(encoded), st.just("application/json")))
    raw = st.tuples(endpoints, raw_bodies, st.sampled_from(CONTENT_TYPES))
    limits = st.tuples(st.just("output"), over_limits, st.just("application/json"))
    return st.one_of(mutated, raw, limits)


def check_response(response):
    """No 5xx; a 4xx carries the error envelope with a code string."""
    TALLY["tried"] += 1
    if response.status_code >= 500:
        TALLY["server_errors"] += 1
    assert response.status_code < 500, response.get_data()[:300]
    if response.status_code >= 400:
        error = response.get_json()["error"]
        assert isinstance(error["code"], str) and error["code"]
        assert isinstance(error["message"], str)
        assert isinstance(error["details"], dict)


def check_kept(before, after, refused):
    """A refusal changes nothing; an acceptance only adds rows (and moves counters)."""
    if refused:
        changed = after != before
    else:
        changed = any(not set(before[t]) <= set(after[t]) for t in ("messages", "outputs"))
    TALLY["accepted_rows_changed"] += changed
    assert not changed
    figures.record("bad input", **TALLY)


@FUZZ
@given(request=requests())
def test_bad_bodies_to_every_write_endpoint(client, accepted, snapshot, request):
    endpoint, body, content_type = request
    path = f"{SESSIONS}/{accepted}/{endpoint}" if endpoint else SESSIONS
    before = snapshot()
    response = client.post(path, data=body, content_type=content_type)
    check_response(response)
    check_kept(before, snapshot(), refused=response.status_code >= 400)


malformed_lines = st.one_of(
    st.text(max_size=60),
    st.text(max_size=30).map(lambda t: '{"type": "assistant", "message": ' + t),
    json_values.map(json.dumps),
    st.builds(lambda v: json.dumps({"type": "assistant", "message": {"content": v}}),
              json_values),
    st.builds(lambda v: json.dumps({"type": "result", "subtype": v}), json_values),
    st.just("[" * 300 + "]" * 300),
)


@FUZZ
@given(lines=st.lists(malformed_lines, min_size=1, max_size=MAX_CHUNKS),
       stream=st.sampled_from(["stdout", "stderr", "system"]))
def test_random_and_malformed_stdout_lines_are_buffered_and_never_fail(
        client, accepted, snapshot, rows, lines, stream):
    before = snapshot()
    start = len(before["outputs"]) + 100
    response = post_lines(client, accepted, lines, start_seq=start, stream=stream)
    check_response(response)
    fits = all(len(line) <= MAX_LINE for line in lines)
    assert response.status_code == (200 if fits else 413)
    after = snapshot()
    check_kept(before, after, refused=not fits)
    if fits:
        assert len(after["outputs"]) == len(before["outputs"]) + len(lines)
