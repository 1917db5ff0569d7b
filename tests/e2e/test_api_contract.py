"""Every operation of /api/openapi.json, fed generated requests through the WSGI app.

Authentication is on and each request carries a valid token of the kind its
operation documents. Each response must not be a 5xx, and its status, content
type and body must be the ones the document gives for that operation.
"""
import pytest

from tests.extras import require

require("schemathesis")

import schemathesis  # noqa: E402
from hypothesis import HealthCheck  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis import checks  # noqa: E402

from app.api_docs.spec import build_spec  # noqa: E402
from app.config import Config  # noqa: E402
from app.db import writing  # noqa: E402
from app.services import tokens  # noqa: E402
from tests import claude_lines as cl  # noqa: E402
from tests import figures  # noqa: E402

SESSIONS = "/api/remote/sessions"
MAX_EXAMPLES = 25
CASES = []  # status of every generated request, across operations and backends


@pytest.fixture
def app_config():
    # A short poll keeps the replay of a completed session's stream quick.
    return {"AUTH_DISABLED": False, "STREAM_POLL_SECONDS": 0.01}


@pytest.fixture
def world(app, client):
    """A user and a runner token, a running session of the user's on the runner's
    machine (for writes) and a completed one with output (for reads and the stream)."""
    with app.app_context():
        runner = tokens.issue("runner", "m1", writing())[1]
        user = tokens.issue("user", "alice", writing())[1]
    sids = []
    for _ in range(2):
        response = client.post(SESSIONS, json={"session_type": "agent", "machine": "m1"},
                               headers={"Authorization": f"Bearer {user}"})
        assert response.status_code == 201
        sids.append(response.get_json()["session"]["session_id"])
    running, done = sids
    lines = [cl.assistant(cl.text("hello")), cl.result()]
    chunks = [{"seq": i, "data": line} for i, line in enumerate(lines)]
    runner_header = {"Authorization": f"Bearer {runner}"}
    assert client.post(f"{SESSIONS}/{done}/output", json={"chunks": chunks},
                       headers=runner_header).status_code == 200
    assert client.post(f"{SESSIONS}/{done}/complete", json={"exit_code": 0},
                       headers=runner_header).status_code == 200
    return {"runnerToken": runner, "userToken": user, "running": running, "done": done}


def documented_operations():
    """(method, path) of every operation in the document of the default settings."""
    document = build_spec(vars(Config)).to_dict()
    return [(method.upper(), path) for path, item in document["paths"].items()
            for method in item]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("method, path", documented_operations())
def test_every_operation_keeps_its_contract(app, world, method, path, mode):
    """Positive cases fit the document, negative ones break it (and must be a 4xx)."""
    operation = schemathesis.openapi.from_wsgi("/api/openapi.json", app)[path][method]
    token = world[next(iter(operation.definition.raw["security"][0]))]
    # A generated id is always an unknown session (a 404, tested elsewhere); the
    # real ones reach the code behind the lookup. Writes go to the running
    # session, reads (the stream too: it ends) to the completed one.
    fixed = {}
    if "{session_id}" in path:
        fixed["session_id"] = world["running"] if method == "POST" else world["done"]
    cases = []
    # A document cannot say which cursor the server handed out or whether a query
    # holds a word, so a case that fits it may still be a 422: "positive data is
    # accepted" does not hold here. And a GET ignores query arguments it does not
    # know, as HTTP servers do, so only write bodies (strict: unknown fields are a
    # 422) must reject every negative case.
    excluded = [checks.positive_data_acceptance]
    if method == "GET":
        excluded.append(checks.negative_data_rejection)

    @given(case=operation.as_strategy(mode, path_parameters=fixed))
    @settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def check(case):
        response = case.call_and_validate(headers={"Authorization": f"Bearer {token}"},
                                          excluded_checks=excluded)
        assert response.status_code < 500
        cases.append(response.status_code)

    check()
    assert cases
    CASES.extend(cases)
    figures.record("openapi", cases=len(CASES),
                   server_errors=sum(status >= 500 for status in CASES))
