"""Build the OpenAPI 3 document from the operation table and the marshmallow schemas."""
from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from app.api_docs.envelopes import ErrorEnvelopeSchema
from app.api_docs.operations import operations

OPENAPI_VERSION = "3.0.3"
ERROR_REF = "#/components/schemas/ErrorEnvelope"
SECURITY_SCHEMES = {
    "runnerToken": {"type": "http", "scheme": "bearer",
                    "description": "a runner token (`tlr_...`): writes the sessions of its"
                                   " machine"},
    "userToken": {"type": "http", "scheme": "bearer",
                  "description": "a user token (`tlu_...`): reads the user's sessions (an"
                                 " admin's reads all); the viewer's sign-in cookie also reads"},
}


def build_spec(config):
    """An APISpec holding every /api operation; `config` supplies the page-size limits."""
    spec = APISpec(
        title="turnlog", version="1", openapi_version=OPENAPI_VERSION,
        plugins=[MarshmallowPlugin()],
        info={"description": "Transcripts of CLI coding agents' stdout (docs/api.md)."},
    )
    spec.components.schema("ErrorEnvelope", schema=ErrorEnvelopeSchema)
    for name, scheme in SECURITY_SCHEMES.items():
        spec.components.security_scheme(name, scheme)
    paths = {}
    for path, method, operation in operations(config):
        paths.setdefault(path, {})[method] = _operation(operation)
    for path, methods in paths.items():
        spec.path(path=path, operations=methods)
    return spec


def _operation(operation):
    """The OpenAPI operation object: success responses, then one per error status."""
    operation = dict(operation)
    responses = {str(status): {"description": description, "content": content}
                 for status, (description, content) in operation.pop("responses").items()}
    for status, description in sorted(operation.pop("errors").items()):
        responses[str(status)] = {"description": description, "content": {
            "application/json": {"schema": {"$ref": ERROR_REF}}}}
    operation["responses"] = responses
    return operation
