"""GET /api/openapi.json: the OpenAPI document, open to anyone (it holds no data)."""
from flask import Blueprint
from flask import current_app

from app.api_docs.spec import build_spec

bp = Blueprint("api_docs", __name__)


@bp.get("/api/openapi.json")
def openapi():
    """The document for this app's settings, built once per app (it never changes)."""
    document = current_app.extensions.get("turnlog_openapi")
    if document is None:
        document = build_spec(current_app.config).to_dict()
        current_app.extensions["turnlog_openapi"] = document
    return document
