"""The house rules of the code map (docs/architecture.md), checked on the source."""
import ast
import pathlib

import pytest

APP = pathlib.Path(__file__).resolve().parents[2] / "app"
# The layers below the web: none of them may import Flask or the web modules.
PURE = ("services", "transcript", "providers", "formats", "storage")
WEB_MODULES = ("flask", "werkzeug", "app.db", "app.errors", "app.request_args", "app.schemas")


def imported_modules(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("package", PURE)
def test_no_layer_below_the_web_imports_flask_or_the_web_modules(package):
    offenders = sorted(
        f"{path.relative_to(APP)}: {name}"
        for path in (APP / package).rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in WEB_MODULES or name.startswith(WEB_MODULES)
    )
    assert offenders == []


@pytest.mark.parametrize("package", ["transcript", "providers", "formats"])
def test_pure_packages_touch_no_storage_and_no_use_case(package):
    offenders = sorted(
        f"{path.relative_to(APP)}: {name}"
        for path in (APP / package).rglob("*.py")
        for name in imported_modules(path)
        if name.startswith(("app.storage", "app.services.ingest", "app.services.sessions",
                            "app.services.streaming", "sqlalchemy"))
    )
    assert offenders == []


def test_no_folder_holds_more_than_15_modules():
    crowded = {str(folder.relative_to(APP.parent)): count
               for folder in [APP, *[p for p in APP.rglob("*") if p.is_dir()]]
               if (count := len(list(folder.glob("*.py")))) > 15}
    assert crowded == {}


def test_the_client_imports_nothing_of_the_server():
    """app/client runs on machines without the server's database (docs/runner.md)."""
    server = ("flask", "werkzeug", "sqlalchemy", "flask_sqlalchemy", "app.db", "app.extensions",
              "app.services", "app.storage", "app.transcript", "app.providers", "app.cli")
    offenders = sorted(
        f"{path.relative_to(APP)}: {name}"
        for path in (APP / "client").rglob("*.py")
        for name in imported_modules(path)
        if name in server or name.startswith(tuple(f"{module}." for module in server))
    )
    assert offenders == []
