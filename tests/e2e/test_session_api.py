"""The session API through the Flask test client: payloads match the rows."""

from tests import claude_lines as cl
from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines


def test_get_payload_matches_rows(client, rows):
    sid = create_session(client, "agent")
    response = post_lines(client, sid, [
        cl.system_init(),
        cl.assistant(cl.text("Looking."), cl.tool_use("toolu_9")),
        cl.tool_result("toolu_9"),
        cl.assistant(cl.text("Found it.")),
        cl.result(),
    ])
    assert response.status_code == 200
    assert response.get_json() == {"accepted": 5, "duplicates": 0, "last_event_index": 4,
                                   "usage_counted": 0}

    session = get_session(client, sid)
    stored = rows("SELECT id, role, content FROM session_messages "
             "WHERE session_id = ? ORDER BY id", sid)
    assert [(m["id"], m["role"], m["content"]) for m in session["messages"]] == stored
    assert session["message_count"] == len(stored) == 2
    assert session["messages"][1]["content"] == "Looking.\n\nFound it."
    assert [b["type"] for b in session["messages"][1]["content_blocks"]] == [
        "text", "tool_use", "text"]  # in arrival order; ordinary: the tool_result is dropped
    assert "turn_key" not in session["messages"][1]
    assert "next_event_index" not in session
    assert complete(client, sid).get_json()["session"]["status"] == "completed"


def test_tool_only_ordinary_turn_leaves_no_empty_bubble(client, rows):
    sid = create_session(client, "chat")
    post_lines(client, sid, [cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()])
    session = get_session(client, sid)
    assert session["messages"] == []
    assert session["message_count"] == 0
    assert rows("SELECT COUNT(*) FROM session_messages")[0][0] == 0


def test_autonomous_tool_only_turn_is_kept_as_evidence(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf-9"})
    post_lines(client, sid, [cl.assistant(cl.tool_use("t1")), cl.tool_result("t1"), cl.result()])
    [message] = get_session(client, sid)["messages"]
    assert message["content"] == ""
    assert [b["type"] for b in message["content_blocks"]] == ["tool_use", "tool_result"]


def test_message_count_equals_rows_after_mixed_traffic(client, rows):
    sid = create_session(client, "agent")
    lines = [cl.system_init(), cl.assistant(cl.text("a")), cl.result(),
             cl.assistant(cl.thinking()), cl.result(),
             cl.assistant(cl.text("b")), cl.result(), cl.assistant(cl.text("tail"))]
    post_lines(client, sid, lines[:4])
    post_lines(client, sid, lines)  # a retry of the same seqs plus new ones
    complete(client, sid)
    complete(client, sid)
    session = get_session(client, sid)
    count = rows("SELECT COUNT(*) FROM session_messages WHERE session_id = ? "
                 "AND role IN ('assistant', 'system')", sid)[0][0]
    assert session["message_count"] == count == 4
    assert [m["content"] for m in session["messages"]][1:] == ["a", "b", "tail"]


def test_usage_reports_count_once(client):
    sid = create_session(client)
    report = {"report_id": "rep-1", "input_tokens": 100, "output_tokens": 20, "requests": 1}
    first = client.post(f"/api/remote/sessions/{sid}/usage", json=report).get_json()
    again = client.post(f"/api/remote/sessions/{sid}/usage", json=report).get_json()
    client.post(f"/api/remote/sessions/{sid}/usage",
                json={**report, "report_id": "rep-2", "requests": 2})
    post_lines(client, sid, [cl.assistant(cl.text("no tokens from me")), cl.result()])
    assert first["counted"] is True and again["counted"] is False
    session = get_session(client, sid)
    assert session["request_count"] == 3
    assert (session["total_input_tokens"], session["total_output_tokens"]) == (200, 40)
    assert session["total_tokens"] == 240


def test_usage_reports_in_one_request_count_each_once_with_the_single_ones(client, rows):
    sid = create_session(client)
    client.post(f"/api/remote/sessions/{sid}/usage",
                json={"report_id": "a", "input_tokens": 1, "output_tokens": 1, "requests": 1})
    reports = [{"report_id": "a", "input_tokens": 100, "requests": 1},  # counted before
               {"report_id": "b", "input_tokens": 10, "output_tokens": 2, "requests": 1},
               {"report_id": "b", "input_tokens": 10, "output_tokens": 2, "requests": 1},  # a copy
               {"report_id": "c", "output_tokens": 5}]
    reply = client.post(f"/api/remote/sessions/{sid}/usage-reports", json={"reports": reports})
    assert reply.status_code == 200, reply.get_json()
    body = reply.get_json()
    assert body["counted"] == [False, True, False, True]
    assert (body["session"]["total_input_tokens"], body["session"]["total_output_tokens"],
            body["session"]["request_count"]) == (11, 8, 2)
    again = client.post(f"/api/remote/sessions/{sid}/usage-reports", json={"reports": reports})
    assert again.get_json()["counted"] == [False] * 4
    assert rows("SELECT COUNT(*) FROM usage_report_receipts WHERE session_id = ?", sid) == [(3,)]
    # a body that fails validation counts none of its reports
    bad = client.post(f"/api/remote/sessions/{sid}/usage-reports",
                      json={"reports": [{"report_id": "d", "input_tokens": 1}, {"input_tokens": 2}]})
    assert bad.status_code == 422
    assert client.post(f"/api/remote/sessions/{sid}/usage-reports",
                       json={"reports": []}).status_code == 422
    assert rows("SELECT COUNT(*) FROM usage_report_receipts WHERE session_id = ?", sid) == [(3,)]


def test_usage_reports_ride_with_the_output_that_carries_them_in_one_transaction(client, rows):
    sid = create_session(client)
    body = {"chunks": [{"seq": 0, "data": cl.assistant(cl.text("hi"))}, {"seq": 1, "data": cl.result()}],
            "usage": [{"report_id": "line-1", "input_tokens": 3, "output_tokens": 7, "requests": 1}]}
    first = client.post(f"/api/remote/sessions/{sid}/output", json=body).get_json()
    assert (first["accepted"], first["usage_counted"]) == (2, 1)
    again = client.post(f"/api/remote/sessions/{sid}/output", json=body).get_json()
    assert (again["accepted"], again["duplicates"], again["usage_counted"]) == (0, 2, 0)
    session = get_session(client, sid)
    assert (session["request_count"], session["total_tokens"], session["message_count"]) == (1, 10, 1)
    # a refused batch counts none of its reports: the transaction is one
    closed = complete(client, sid)
    assert closed.status_code == 200
    late = client.post(f"/api/remote/sessions/{sid}/output", json={
        "chunks": [{"seq": 2, "data": "more"}],
        "usage": [{"report_id": "line-2", "input_tokens": 5, "requests": 1}]})
    assert late.status_code == 409
    assert rows("SELECT report_id FROM usage_report_receipts WHERE session_id = ?", sid) == [("line-1",)]


def test_output_duplicates_are_reported_not_restored(client, rows):
    sid = create_session(client)
    post_lines(client, sid, ["a", "b"])
    again = post_lines(client, sid, ["a", "b", "c"]).get_json()
    assert again == {"accepted": 1, "duplicates": 2, "last_event_index": 2, "usage_counted": 0}
    stored = rows("SELECT event_index, producer_seq, payload FROM remote_runtime_outputs "
                  "WHERE session_id = ? ORDER BY event_index", sid)
    assert stored == [(0, 0, "a"), (1, 1, "b"), (2, 2, "c")]


def test_messages_are_keyset_paged_in_write_order(client):
    sid = create_session(client)
    lines = []
    for n in range(5):
        lines += [cl.assistant(cl.text(f"turn {n}")), cl.result()]
    post_lines(client, sid, lines)
    seen, cursor = [], None
    while True:
        url = f"/api/remote/sessions/{sid}/messages?limit=2" + (f"&after={cursor}" if cursor else "")
        page = client.get(url).get_json()
        seen += [m["content"] for m in page["messages"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"turn {n}" for n in range(5)]


def test_openai_format_of_an_autonomous_transcript(client):
    sid = create_session(client, "workflow", {"workflow_id": "wf-1"})
    post_lines(client, sid, [cl.assistant(cl.text("Checking"), cl.tool_use("toolu_5")),
                             cl.tool_result("toolu_5", "ok"), cl.result()])
    out = client.get(f"/api/remote/sessions/{sid}/messages?format=openai").get_json()["messages"]
    assert out[0]["role"] == "assistant" and out[0]["tool_calls"][0]["id"] == "toolu_5"
    assert out[1] == {"role": "tool", "tool_call_id": "toolu_5", "content": "ok"}


def test_sessions_are_listed_newest_first_and_paged(client):
    made = [create_session(client) for _ in range(3)]
    first = client.get("/api/remote/sessions?limit=2").get_json()
    second = client.get(f"/api/remote/sessions?limit=2&cursor={first['next_cursor']}").get_json()
    listed = [s["session_id"] for s in first["sessions"] + second["sessions"]]
    assert listed == list(reversed(made))
    assert second["next_cursor"] is None


def test_session_payload_carries_the_turn_counters(client):
    sid = create_session(client, "agent")
    post_lines(client, sid, [
        cl.assistant(cl.text("Looking."), cl.tool_use("toolu_9")), cl.tool_result("toolu_9"),
        cl.result(),
        cl.assistant(cl.tool_use("toolu_10")), cl.result(),
    ])
    session = get_session(client, sid)
    assert (session["conversation_turn_count"], session["visible_message_count"],
            session["message_count"]) == (2, 1, 1)
    listed = client.get("/api/remote/sessions").get_json()["sessions"][0]
    assert listed["conversation_turn_count"] == 2 and listed["visible_message_count"] == 1


def test_transcript_usage_sums_the_turns_results_and_usage_reports_do_not_move_it(client):
    sid = create_session(client)
    one = {"input_tokens": 18, "output_tokens": 99, "cache_read_input_tokens": 8800,
           "cache_creation_input_tokens": 800}
    turn = [cl.assistant(cl.text("a")), cl.result(usage=one)]  # its lines say 3 in, 7 out
    post_lines(client, sid, turn)
    post_lines(client, sid, [cl.assistant(cl.text("b")), cl.result(usage=None)], start_seq=2)
    client.post(f"/api/remote/sessions/{sid}/usage",
                json={"report_id": "rep-1", "input_tokens": 5, "output_tokens": 5, "requests": 1})
    post_lines(client, sid, turn, start_seq=4)  # the same lines again, under new seqs
    session = get_session(client, sid)
    assert session["transcript_usage"] == {
        "input_tokens": 18 + 3, "output_tokens": 99 + 7, "cache_read_input_tokens": 8800,
        "cache_creation_input_tokens": 800, "total_cost_usd": 0.0}
    assert session["total_tokens"] == 10
    assert session["messages"][0]["metadata"]["usage"] == one
    assert len(session["messages"]) == session["message_count"] == 2


def test_each_message_text_is_in_the_payload_once_and_stored_twice(client, rows):
    """The row keeps its blocks in `content_blocks` and `metadata.content_blocks`; the API
    drops the metadata copy: the text is in `content` and `content_blocks` only."""
    sid = create_session(client, "agent")
    marker = "unique-marker-" + "z" * 40
    post_lines(client, sid, [cl.assistant(cl.text(marker)), cl.result()])
    for url in (f"/api/remote/sessions/{sid}", f"/api/remote/sessions/{sid}/messages"):
        body = client.get(url).get_data(as_text=True)
        assert body.count(marker) == 2, url  # content, content_blocks[0].text
    [message] = get_session(client, sid)["messages"]
    assert "content_blocks" not in message["metadata"] and message["metadata"]["trigger"] == "result"
    [(stored,)] = rows("SELECT metadata FROM session_messages WHERE session_id = ?", sid)
    assert marker in stored  # storage unchanged
