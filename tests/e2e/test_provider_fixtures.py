"""Recorded provider streams, end to end: each fixture under tests/fixtures/streams/<provider>/
(`name.jsonl`) is posted to a session of that provider, the session is completed, and the
transcript must equal `name.expected.json` for each session kind."""
import json
from pathlib import Path

import pytest

from tests.api import complete
from tests.api import create_session
from tests.api import get_session
from tests.api import post_lines

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"
FIXTURES = sorted(STREAMS.glob("*/*.jsonl"))
KINDS = {
    "ordinary": ("agent", {}),
    "autonomous": ("workflow", {"workflow_id": "wf-fixture"}),
}


def _id(path):
    return f"{path.parent.name}/{path.stem}"


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def _expected(path):
    return json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))


def _transcript(session):
    return [
        {"role": m["role"], "content": m["content"],
         "block_types": [b["type"] for b in m["content_blocks"]]}
        for m in session["messages"]
    ]


def test_every_provider_has_a_fixture_with_an_expected_transcript():
    from app.services.providers import PROVIDERS

    assert {path.parent.name for path in FIXTURES} == set(PROVIDERS)
    for path in FIXTURES:
        assert path.with_suffix(".expected.json").is_file(), path


@pytest.mark.parametrize("batching", ["one_request", "line_by_line"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_fixture_stream_yields_the_expected_transcript(client, path, kind, batching):
    session_type, context = KINDS[kind]
    sid = create_session(client, session_type, context, provider=path.parent.name)
    lines = _lines(path)
    if batching == "one_request":
        assert post_lines(client, sid, lines).get_json()["accepted"] == len(lines)
    else:
        for seq, line in enumerate(lines):
            assert post_lines(client, sid, [line], start_seq=seq).status_code == 200
    assert complete(client, sid).status_code == 200

    session = get_session(client, sid)
    expected = _expected(path)[kind]
    assert session["provider"] == path.parent.name
    assert _transcript(session) == expected["messages"]
    assert session["message_count"] == expected["message_count"] == len(expected["messages"])


@pytest.mark.parametrize("path", FIXTURES, ids=_id)
def test_same_seqs_posted_again_change_nothing(client, path):
    sid = create_session(client, "workflow", {"workflow_id": "wf-fixture"},
                         provider=path.parent.name)
    lines = _lines(path)
    post_lines(client, sid, lines)
    again = post_lines(client, sid, lines).get_json()
    assert again["accepted"] == 0 and again["duplicates"] == len(lines)
    complete(client, sid)
    assert get_session(client, sid)["message_count"] == _expected(path)["autonomous"]["message_count"]


def test_an_unknown_provider_is_refused_when_the_session_is_created(client):
    response = client.post("/api/remote/sessions",
                           json={"session_type": "agent", "provider": "openai"})
    assert response.status_code == 422
    assert "provider" in response.get_json()["error"]["details"]["fields"]
