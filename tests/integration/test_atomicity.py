"""A request that fails leaves none of its effects: no lines, no rows, no moved counters."""
import pytest
from sqlalchemy.exc import IntegrityError

from app.core.records import Chunk
from app.db import writing
from app.services.ingest import ingest_output
from tests import claude_lines as cl


@pytest.mark.parametrize("kind", ["ordinary", "autonomous"])
@pytest.mark.usefixtures("app")
def test_a_failing_batch_is_rolled_back_whole(kind, new_session, feed, rows, outputs,
                                              messages, session_row, counts):
    sid = new_session(kind)
    feed(sid, [cl.assistant(cl.text("Kept."), uuid="a-1")])
    state = rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid)
    bad = [Chunk(cl.assistant(cl.text("Lost."), uuid="a-2"), "stdout", 1),
           Chunk(cl.result(uuid="r-1"), "stdout", 2),
           Chunk("no such stream", "bogus", 3)]  # violates the stream CHECK constraint

    with pytest.raises(IntegrityError):
        ingest_output(sid, bad, writing(), retention_seconds=60)

    assert [i for i, _, _, _ in outputs(sid)] == [0]
    assert messages(sid) == []
    assert session_row(sid)["next_event_index"] == 1
    assert rows("SELECT turn_state FROM agent_sessions WHERE session_id = ?", sid) == state

    feed(sid, [cl.result(uuid="r-2")], seq=1)
    assert [m["content"] for m in messages(sid)] == ["Kept."]
    assert [i for i, _, _, _ in outputs(sid)] == [0, 1]
    assert counts(sid) == (1, 1)
