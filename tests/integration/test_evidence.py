"""The evidence record on a real database: every provider fixture posted over HTTP,
line by line or at once, re-sent, pruned from the buffer, and read back through GET
.../evidence and with SQL."""
import json
from pathlib import Path

import pytest
from sqlalchemy import event

from app.db import detached_units_of_work
from app.extensions import db
from app.services import streaming
from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import post_lines
from tests.figures import record

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
FIXTURES = sorted(STREAMS.glob("*/*.jsonl"))
KINDS = {"ordinary": ("agent", {}), "autonomous": ("workflow", {"workflow_id": "wf-fixture"})}
SESSIONS = "/api/remote/sessions"


def _id(path):
    return f"{path.parent.name}/{path.stem}"


def lines_of(path):
    return path.read_text(encoding="utf-8").splitlines()


def expected(path):
    return json.loads(path.with_suffix(".evidence.json").read_text(encoding="utf-8"))


def evidence(client, sid, **query):
    response = client.get(f"{SESSIONS}/{sid}/evidence", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def all_evidence(client, sid):
    return evidence(client, sid, limit=200)["evidence"]


def comparable(items):
    return [{k: v for k, v in item.items() if k not in ("id", "turn_id", "created_at")}
            for item in items]


def posted(client, path, kind="ordinary", batching="one_request"):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = lines_of(path)
    if batching == "one_request":
        assert post_lines(client, sid, lines).status_code == 200
    else:
        for seq, line in enumerate(lines):
            assert post_lines(client, sid, [line], start_seq=seq).status_code == 200
    assert complete(client, sid).status_code == 200
    return sid


@pytest.mark.parametrize("batching", ["one_request", "line_by_line"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_each_fixture_s_commands_come_back_as_its_expected_evidence(client, rows, path, kind,
                                                                     batching):
    sid = posted(client, path, kind, batching)
    items = all_evidence(client, sid)
    assert comparable(items) == expected(path)
    stored = rows("SELECT evidence_id, turn_id, exit_code, is_error, first_event_index"
                  " FROM session_evidence WHERE session_id = ? ORDER BY id", sid)
    assert [(i["evidence_id"], i["turn_id"], i["exit_code"], i["is_error"], i["event_range"][0])
            for i in items] == [(e, t, c, bool(err), first) for e, t, c, err, first in stored]
    turns = {key for key, in rows("SELECT turn_key FROM session_turns WHERE session_id = ?", sid)}
    assert {i["turn_id"] for i in items} <= turns


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_the_same_seqs_posted_again_add_no_evidence(client, rows, path):
    sid = create_session(client, provider=path.parent.name)
    lines = lines_of(path)
    for seq, line in enumerate(lines):  # every request re-sends the line before it
        first = max(seq - 1, 0)
        assert post_lines(client, sid, lines[first:seq + 1], start_seq=first).status_code == 200
    before = all_evidence(client, sid)
    assert post_lines(client, sid, lines).get_json()["duplicates"] == len(lines)
    complete(client, sid)
    assert all_evidence(client, sid) == before
    assert comparable(before) == expected(path)
    assert rows("SELECT COUNT(*) FROM session_evidence WHERE session_id = ?", sid) == [(len(before),)]


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_lines_re_sent_under_new_seqs_add_no_evidence(client, path):
    """A stream sent again under new seqs is known as a copy, for every provider:
    Claude lines by their ids, Codex and Gemini lines by their content and place."""
    sid = create_session(client, provider=path.parent.name)
    lines = lines_of(path)
    post_lines(client, sid, lines)
    before = all_evidence(client, sid)
    post_lines(client, sid, lines, start_seq=len(lines))
    complete(client, sid)
    assert all_evidence(client, sid) == before
    assert comparable(before) == expected(path)


def test_pages_follow_next_cursor_in_run_order(client):
    sid = posted(client, STREAMS / "codex" / "test_runs.jsonl")
    whole = all_evidence(client, sid)
    walked, cursor = [], None
    while True:
        page = evidence(client, sid, limit=1, **({"after": cursor} if cursor else {}))
        walked.extend(page["evidence"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == whole and len(whole) == 3
    assert [i["event_range"][0] for i in whole] == sorted(i["event_range"][0] for i in whole)


@pytest.mark.parametrize("after", ["x", "-1", str(2**63)])
def test_a_bad_cursor_is_a_422(client, after):
    sid = create_session(client)
    response = client.get(f"{SESSIONS}/{sid}/evidence", query_string={"after": after})
    assert response.status_code == 422
    assert response.get_json()["error"]["code"] == "invalid_cursor"


def test_an_unknown_session_is_a_404(client):
    response = client.get(f"{SESSIONS}/no-such-session/evidence")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "session_not_found"


def test_evidence_outlives_the_buffer_rows_it_came_from(app, client, rows):
    sid = posted(client, STREAMS / "claude" / "test_runs.jsonl")
    before = all_evidence(client, sid)
    rows("UPDATE remote_runtime_outputs SET expires_at = '2000-01-01T00:00:00.000000Z'"
         " WHERE session_id = ?", sid)
    with app.app_context():
        assert streaming.prune_outputs(detached_units_of_work()) == len(lines_of(
            STREAMS / "claude" / "test_runs.jsonl"))
    assert rows("SELECT COUNT(*) FROM remote_runtime_outputs WHERE session_id = ?", sid) == [(0,)]
    assert all_evidence(client, sid) == before and len(before) == 3


@pytest.mark.sqlite_only
def test_only_requests_that_close_a_turn_with_commands_touch_the_evidence_table(app, client):
    """The ingest path pays for evidence only where there is some: one statement for
    the request whose result line closes a turn that ran commands, none otherwise."""
    statements = []

    def trace(dbapi_connection, _record):
        dbapi_connection.set_trace_callback(statements.append)

    with app.app_context():
        db.engine.dispose()
        event.listen(db.engine, "connect", trace)
    try:
        sid = create_session(client, provider="claude")
        per_request = []
        lines = [cl.assistant(cl.text("plain")), cl.result(),
                 cl.assistant(cl.tool_use("b1", "Bash", {"command": "pytest -q"})),
                 cl.tool_result("b1", "2 passed in 0.01s"),
                 cl.assistant(cl.tool_use("b2", "Bash", {"command": "ls"})),
                 cl.tool_result("b2", "README.md"), cl.result()]
        for seq, line in enumerate(lines):
            statements.clear()
            assert post_lines(client, sid, [line], start_seq=seq).status_code == 200
            per_request.append(sum("session_evidence" in s for s in statements))
    finally:
        with app.app_context():
            event.remove(db.engine, "connect", trace)
    assert per_request == [0, 0, 0, 0, 0, 0, 1]
    assert [i["evidence_id"] for i in all_evidence(client, sid)] == ["b1", "b2"]
    record("evidence ingest cost [sqlite]", requests=len(lines),
           evidence_statements=sum(per_request), items=2)


def test_an_exit_code_no_database_can_hold_is_stored_as_unknown_and_the_turn_still_lands(client):
    """A number too large for a 64-bit column is no real exit code: storing it would fail
    the request on every retry, so the item keeps the command with no exit code."""
    sid = create_session(client, provider="codex")
    lines = [
        '{"type": "turn.started"}',
        '{"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",'
        ' "command": "true", "aggregated_output": "", "exit_code": 99999999999999999999999,'
        ' "status": "completed"}}',
        '{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}',
    ]
    assert post_lines(client, sid, lines).status_code == 200
    [item] = all_evidence(client, sid)
    assert (item["command"], item["exit_code"]) == ("true", None)
