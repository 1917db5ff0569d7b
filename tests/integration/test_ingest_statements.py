"""What one small ingest request costs the database: a runner posting a line at a
time is the common case, so its statement count is held down here (issue 14: at most
5, the token lookup included; transaction control not counted). Issue 29's quota on
output bytes per user per day adds one, its counter's UPSERT: 6 with it on (the
default), still 5 with it off.

Counted by SQLite's own trace, which sees every statement, including those the hot
paths hand straight to the driver; the statements are the same on PostgreSQL."""
import pytest
from sqlalchemy import event

from app.db import READ_PROBE
from app.extensions import db
from tests import claude_lines as cl
from tests.api import authed_client
from tests.api import create_session

pytestmark = pytest.mark.sqlite_only

# READ_PROBE is how a SQLite read transaction begins (it takes its snapshot there, to
# wait out a lock in Python): part of the BEGIN, and not run on PostgreSQL.
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA",
                       READ_PROBE.upper())
FTS_INTERNALS = "session_messages_fts_"
MOST_STATEMENTS = 5
DAY_QUOTA_STATEMENTS = 1
# A line that closes a turn also takes the turn's saved blocks, records the turn,
# inserts its row, when the turn ran shell commands, their evidence and, when it made
# tool calls, their results (session_tool_results, issue 32): one statement each.
MOST_STATEMENTS_CLOSING = 9


@pytest.fixture(params=["day quota on", "day quota off"])
def app_config(request):
    # authentication on: the token lookup is part of the cost
    return {} if request.param == "day quota on" else {"MAX_OUTPUT_BYTES_PER_USER_PER_DAY": 0}


@pytest.fixture
def quota_statements(app):
    return DAY_QUOTA_STATEMENTS if app.config["MAX_OUTPUT_BYTES_PER_USER_PER_DAY"] else 0


@pytest.fixture
def statements(app):
    """The SQL statements the app runs while the test's block does; a list of strings
    (trigger bodies, which SQLite traces as comments, are left out)."""
    seen = []

    def record(statement):
        if statement.lstrip().upper().startswith((*TRANSACTION_CONTROL, "--")):
            return
        if FTS_INTERNALS in statement:
            return  # the search index's own bookkeeping, run by its trigger
        if seen and seen[-1] == statement:
            return  # traced again as it enters a trigger: the same statement
        seen.append(statement)

    def trace(dbapi_conn, record_, proxy):
        dbapi_conn.set_trace_callback(record)

    with app.app_context():
        engine = db.engine
        engine.dispose()  # connections opened from now on are traced from checkout
    event.listen(engine, "checkout", trace)
    yield seen
    event.remove(engine, "checkout", trace)


def post_one(client, sid, seq, line):
    response = client.post(f"/api/remote/sessions/{sid}/output",
                           json={"chunks": [{"seq": seq, "data": line}]})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["accepted"] == 1


@pytest.mark.parametrize("kind", ["agent", "workflow"])
def test_a_single_line_post_runs_at_most_five_statements(app, statements, rows, kind,
                                                         quota_statements):
    client = authed_client(app)
    context = {"workflow_id": "wf-1"} if kind == "workflow" else {}
    sid = create_session(client, kind, context)
    lines = [cl.system_init(), cl.assistant(cl.text("Looking.")), cl.assistant(cl.tool_use("t1")),
             cl.tool_result("t1", "ok"), cl.assistant(cl.text("Done."))]
    counts = []
    for seq, line in enumerate([*lines, cl.result()]):
        statements.clear()
        post_one(client, sid, seq, line)
        counts.append(len(statements))
    assert max(counts[:-1]) <= MOST_STATEMENTS + quota_statements, (counts, statements)
    assert counts[-1] <= MOST_STATEMENTS_CLOSING + quota_statements, statements
    # and the cheap path kept everything: the turn's row holds every block
    [(content, blocks)] = rows("SELECT content, content_blocks FROM session_messages"
                               " WHERE session_id = ? AND role = 'assistant'", sid)
    assert "Looking." in content and "Done." in content
    assert "t1" in blocks
    assert rows("SELECT COUNT(*) FROM session_turn_parts WHERE session_id = ?", sid) == [(0,)]


def test_a_resent_line_is_found_by_one_lookup_and_stored_once(app, statements, rows):
    client = authed_client(app)
    sid = create_session(client)
    line = cl.assistant(cl.text("Once."))
    post_one(client, sid, 0, line)
    post_one(client, sid, 1, cl.assistant(cl.text("Twice.")))
    statements.clear()
    response = client.post(f"/api/remote/sessions/{sid}/output",
                           json={"chunks": [{"seq": 0, "data": line}]})
    assert response.get_json()["duplicates"] == 1
    assert any("producer_seq IN" in s for s in statements)  # an old seq is looked up
    assert rows("SELECT COUNT(*), MAX(producer_seq) FROM remote_runtime_outputs"
                " WHERE session_id = ?", sid) == [(2, 1)]
    assert rows("SELECT max_seq FROM agent_sessions WHERE session_id = ?", sid) == [(1,)]


def test_seqs_above_the_highest_stored_are_not_looked_up(app, statements, rows):
    client = authed_client(app)
    sid = create_session(client)
    post_one(client, sid, 5, cl.assistant(cl.text("Five.")))
    statements.clear()
    post_one(client, sid, 6, cl.assistant(cl.text("Six.")))
    assert not any("producer_seq IN" in s for s in statements)
    # a lower seq never seen is looked up, found new, and stored
    statements.clear()
    post_one(client, sid, 2, cl.assistant(cl.text("Two.")))
    assert any("producer_seq IN" in s for s in statements)
    assert rows("SELECT producer_seq FROM remote_runtime_outputs WHERE session_id = ?"
                " ORDER BY event_index", sid) == [(5,), (6,), (2,)]
    assert rows("SELECT max_seq FROM agent_sessions WHERE session_id = ?", sid) == [(6,)]


def test_only_a_prompt_echo_reads_the_inputs(app, statements,
                                              quota_statements):
    """An echo at a turn's start (where Claude prints it) inserts its row, reads the
    session's pending inputs and marks the one it names applied; any other line never
    touches session_inputs."""
    client = authed_client(app)
    sid = create_session(client)
    post_one(client, sid, 0, cl.system_init())
    statements.clear()
    post_one(client, sid, 1, '{"type":"user","message":{"role":"user","content":"hi"},'
                             '"uuid":"u-1","isReplay":true}')
    echo = list(statements)
    assert sum("session_inputs" in s for s in echo) == 1  # a lookup; no input is named
    assert len(echo) <= MOST_STATEMENTS + quota_statements + 2, echo  # + the row, the lookup
    statements.clear()
    post_one(client, sid, 2, cl.assistant(cl.text("Hello.")))
    assert not any("session_inputs" in s or "session_permissions" in s for s in statements)
