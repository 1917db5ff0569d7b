"""GET /api/openapi.json: a valid OpenAPI 3 document of every /api route, open to all."""
import re

import pytest

from tests.extras import require

require("openapi_spec_validator")

from openapi_spec_validator import validate  # noqa: E402

from app import schemas  # noqa: E402
from tests import figures  # noqa: E402

DOC = "/api/openapi.json"
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def app_config():
    return {"AUTH_DISABLED": False}


@pytest.fixture
def document(client):
    response = client.get(DOC)
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


def openapi_path(rule):
    """/api/remote/sessions/<session_id> -> /api/remote/sessions/{session_id}"""
    return re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule)


def test_the_document_is_served_without_a_token_and_is_valid_openapi(document):
    validate(document)  # raises on any violation of the OpenAPI 3.0 schema
    assert document["openapi"].startswith("3.")


def test_every_api_route_is_documented_with_its_methods(app, document):
    documented = {(path, method.upper()) for path, item in document["paths"].items()
                  for method in item}
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/") and rule.endpoint != "api_docs.openapi":
            served |= {(openapi_path(rule.rule), m) for m in rule.methods & METHODS}
    assert served, "no /api routes found"
    assert served - documented == set(), "routes missing from the document"
    assert documented - served == set(), "documented operations the app does not serve"
    figures.record("openapi", operations=len(documented))


def test_every_operation_names_its_token_and_documents_its_errors(document):
    schemes = document["components"]["securitySchemes"]
    assert {s["scheme"] for s in schemes.values()} == {"bearer"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            assert operation["security"], where
            assert all(set(req) <= set(schemes) for req in operation["security"]), where
            for status in ("401", "403", "429"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}, where
            if method == "post":
                assert {"413", "422"} <= set(operation["responses"]), where
            if "{session_id}" in path:
                assert "404" in operation["responses"], where


# A person's writes: input to a live session, permission answers, interrupt, stop (issue 30).
USER_WRITES = {("post", "/api/remote/sessions/{session_id}/messages"),
               ("post", "/api/remote/sessions/{session_id}/permissions/{request_id}"),
               ("post", "/api/remote/sessions/{session_id}/interrupt"),
               ("post", "/api/remote/sessions/{session_id}/stop")}
# A runner's read: its command channel (issue 30).
RUNNER_READS = {("get", "/api/remote/sessions/{session_id}/commands")}


def test_writes_take_runner_tokens_and_reads_user_tokens(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            kinds = {name for req in operation["security"] for name in req}
            if (method, path) in RUNNER_READS:
                assert kinds == {"runnerToken"}, path
            elif method == "get" or (method, path) in USER_WRITES:
                assert kinds == {"userToken"}, path
            elif path.endswith("/sessions"):
                assert kinds == {"userToken", "runnerToken"}, path
            else:
                assert kinds == {"runnerToken"}, path


@pytest.mark.parametrize("name, schema", [
    ("SessionCreate", schemas.SessionCreateSchema),
    ("OutputBatch", schemas.OutputBatchSchema),
    ("Chunk", schemas.ChunkSchema),
    ("Complete", schemas.CompleteSchema),
    ("UsageReport", schemas.UsageReportSchema),
    ("Session", schemas.SessionSchema),
    ("Message", schemas.MessageSchema),
])
def test_components_are_the_marshmallow_schemas(document, name, schema):
    component = document["components"]["schemas"][name]
    assert set(component["properties"]) == set(schema().fields)
    required = {n for n, f in schema().fields.items() if f.required}
    assert set(component.get("required", [])) == required
    assert component["additionalProperties"] is False  # unknown fields are a 422


def test_the_stream_is_documented_as_server_sent_events(document):
    operation = document["paths"]["/api/remote/sessions/{session_id}/stream"]["get"]
    assert list(operation["responses"]["200"]["content"]) == ["text/event-stream"]


def test_a_write_body_is_the_schema_the_view_loads(document):
    operation = document["paths"]["/api/remote/sessions/{session_id}/output"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/OutputBatch"}
    chunks = document["components"]["schemas"]["OutputBatch"]["properties"]["chunks"]
    assert chunks["minItems"] == 1
    assert chunks["items"] == {"$ref": "#/components/schemas/Chunk"}
