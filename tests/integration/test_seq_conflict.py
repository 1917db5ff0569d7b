"""A seq names one line for good (issue 29): re-sent with the same stream and text it is
a silent duplicate (a retry), with other content it is SeqConflict (409 seq_conflict)
naming the seq, and nothing of that request is stored."""
import pytest

from app.core.errors import SeqConflict
from app.core.records import Chunk
from app.db import writing
from app.services.ingest import ingest_output
from tests import claude_lines as cl
from tests.api import create_session

LINE = cl.assistant(cl.text("first"))
REPORT = {"report_id": "r1", "input_tokens": 5, "output_tokens": 7, "requests": 1}


def send(sid, chunks, usage=()):
    return ingest_output(sid, chunks, writing(), retention_seconds=60, usage_reports=usage)


@pytest.fixture
def sid(new_session):
    sid = new_session("ordinary")
    assert send(sid, [Chunk(LINE, "stdout", 0), Chunk("noise", "stderr", 1)]).accepted == 2
    return sid


def test_the_same_seq_and_content_again_is_a_silent_duplicate(sid, outputs):
    receipt = send(sid, [Chunk(LINE, "stdout", 0), Chunk("noise", "stderr", 1),
                         Chunk("new", "stdout", 2), Chunk("new", "stdout", 2)])
    assert (receipt.accepted, receipt.duplicates) == (1, 3)
    assert [seq for _, _, _, seq in outputs(sid)] == [0, 1, 2]


@pytest.mark.parametrize("chunk", [Chunk(cl.assistant(cl.text("other")), "stdout", 0),
                                   Chunk("noise", "stdout", 1)],
                         ids=["other text", "other stream"])
def test_a_stored_seq_with_other_content_refuses_the_whole_request(sid, chunk, outputs,
                                                                   session_row, rows):
    before = session_row(sid)
    with pytest.raises(SeqConflict) as refused:
        send(sid, [Chunk("fresh", "stdout", 2), chunk], usage=[REPORT])
    assert refused.value.details == {"seq": chunk.seq}
    assert f"seq {chunk.seq} " in refused.value.message
    assert [payload for _, _, payload, _ in outputs(sid)] == [LINE, "noise"]
    assert session_row(sid) == before
    assert rows("SELECT COUNT(*) FROM usage_report_receipts") == [(0,)]


def test_a_seq_repeated_with_other_content_within_one_batch_is_a_conflict(new_session,
                                                                          outputs):
    sid = new_session("ordinary")
    with pytest.raises(SeqConflict) as refused:
        send(sid, [Chunk("a", "stdout", 7), Chunk("b", "stdout", 8), Chunk("c", "stdout", 7)])
    assert refused.value.details == {"seq": 7}
    assert outputs(sid) == []


def test_the_api_answers_409_seq_conflict_naming_the_seq(client, rows):
    sid = create_session(client)
    chunks = [{"seq": 3, "data": "one"}]
    assert client.post(f"/api/remote/sessions/{sid}/output", json={"chunks": chunks}).status_code == 200
    again = client.post(f"/api/remote/sessions/{sid}/output",
                        json={"chunks": [{"seq": 4, "data": "two"}, {"seq": 3, "data": "uno"}]})
    assert again.status_code == 409
    error = again.get_json()["error"]
    assert (error["code"], error["details"]) == ("seq_conflict", {"seq": 3})
    assert rows("SELECT producer_seq, payload FROM remote_runtime_outputs") == [(3, "one")]
