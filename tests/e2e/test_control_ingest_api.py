"""A real Claude interactive capture posted through the test client, with auth on: the
prompt a user sent comes back as its echo and is applied, the session's transcript
holds a user row where the agent took each prompt, and /events announces permission
requests, their withdrawal and the interrupted turn (tests/fixtures/interactive)."""
import json
from pathlib import Path

import pytest

from app.core.inputs import input_uuid
from app.db import writing
from app.services import tokens
from tests.api import bearer
from tests.e2e.test_stream_replay import parse_sse

SESSIONS = "/api/remote/sessions"
INTERACTIVE = Path(__file__).resolve().parents[1] / "fixtures" / "interactive"
FIRST_UUID = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False, "STREAM_POLL_SECONDS": 0.01}


@pytest.fixture
def world(app, client):
    with app.app_context():
        alice = tokens.issue("user", "alice", writing())[1]
        runner = tokens.issue("runner", "m1", writing())[1]
    opened = client.post(SESSIONS, json={"session_type": "agent", "user_id": "alice",
                                         "machine": "m1"}, headers=bearer(runner))
    assert opened.status_code == 201
    return {"sid": opened.get_json()["session"]["session_id"], "alice": alice, "runner": runner}


def post_output(client, world, lines, start):
    chunks = [{"seq": start + n, "data": line} for n, line in enumerate(lines)]
    response = client.post(f"{SESSIONS}/{world['sid']}/output", json={"chunks": chunks},
                           headers=bearer(world["runner"]))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def session_of(client, world):
    response = client.get(f"{SESSIONS}/{world['sid']}", headers=bearer(world["alice"]))
    assert response.status_code == 200
    return response.get_json()["session"]


def events_of(client, world):
    """The session's live events, once it completed (an open session's stream goes on)."""
    done = client.post(f"{SESSIONS}/{world['sid']}/complete", json={"exit_code": 0},
                       headers=bearer(world["runner"]))
    assert done.status_code == 200
    response = client.get(f"{SESSIONS}/{world['sid']}/events", headers=bearer(world["alice"]))
    assert response.status_code == 200
    return parse_sse(response.get_data(as_text=True))


def test_a_sent_prompt_is_applied_by_its_echo_and_permissions_are_announced(client, world):
    sent = client.post(f"{SESSIONS}/{world['sid']}/messages",
                       json={"content": "say hello", "client_message_id": "c-1"},
                       headers=bearer(world["alice"]))
    assert sent.status_code == 202
    uuid = input_uuid(world["sid"], sent.get_json()["input"]["input_id"])
    assert [i["state"] for i in session_of(client, world)["pending_inputs"]] == ["queued"]
    # the runner wrote the prompt under the input's uuid: the capture's first echo names it
    text = (INTERACTIVE / "claude_permissions.jsonl").read_text().replace(FIRST_UUID, uuid)
    lines = text.splitlines()
    half = len(lines) // 2
    post_output(client, world, lines[:half], 0)
    post_output(client, world, lines[half:], half)
    again = post_output(client, world, lines, 0)  # a re-sent batch
    assert (again["accepted"], again["duplicates"]) == (0, len(lines))

    session = session_of(client, world)
    assert session["pending_inputs"] == []
    messages = client.get(f"{SESSIONS}/{world['sid']}/messages",
                          headers=bearer(world["alice"])).get_json()["messages"]
    users = [m for m in messages if m["role"] == "user"]
    assert [m["content"] for m in users] == ["say hello", "TOOL please", "SLOW reply",
                                             "TOOL again", "say bye"]
    assert users[0]["source"] == "remote_live"
    assert session["message_count"] == len(messages)
    after_first = messages[messages.index(users[0]) + 1]
    assert (after_first["role"], after_first["content"]) == ("assistant", "Hello from the fake.")

    events = events_of(client, world)
    permission = [(name, data) for name, _, data in events if name.startswith("permission.")]
    assert [name for name, _ in permission] == ["permission.requested", "permission.requested",
                                                "permission.resolved"]
    requested = permission[0][1]
    assert requested["tool_name"] == "Bash"
    assert requested["input"] == {"command": "touch made.txt", "description": "make a file"}
    assert requested["expires_at"] is not None
    withdrawn = permission[2][1]
    assert withdrawn["request_id"] == permission[1][1]["request_id"]
    assert (withdrawn["state"], withdrawn["resolved_by"]) == ("cancelled", "agent")


def test_an_interrupted_turn_is_marked_on_events_and_in_its_row(client, world):
    lines = (INTERACTIVE / "claude_interrupt.jsonl").read_text().splitlines()
    post_output(client, world, lines, 0)
    completed = [data for name, _, data in events_of(client, world) if name == "turn.completed"]
    assert [data.get("interrupted") for data in completed] == [True, None]
    assert completed[0]["terminal_reason"] == "interrupted"
    messages = client.get(f"{SESSIONS}/{world['sid']}/messages",
                          headers=bearer(world["alice"])).get_json()["messages"]
    interrupted = next(m for m in messages if m["id"] == completed[0]["message_id"])
    assert interrupted["metadata"]["interrupted"] is True
    assert json.loads(lines[-1])["type"] == "command_lifecycle"
