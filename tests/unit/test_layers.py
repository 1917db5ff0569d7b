"""The house rules of the code map (docs/architecture.md), checked on the source."""
import ast
import pathlib
import sys

import pytest

APP = pathlib.Path(__file__).resolve().parents[2] / "app"
# The layers below the web: none of them may import Flask or the web modules.
PURE = ("core", "services", "transcript", "providers", "formats", "storage")
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


# Dependencies point down (docs/architecture.md): the parts of app/, a package or a
# top-level module each, in layers from the bottom up. A module may import its own layer
# and the layers below it, never one above.
LAYERS = [
    {"core"},                                   # records, errors, clock: imports no app
    {"transcript", "providers", "formats"},     # pure logic
    {"storage"},                                # SQL; steps such as 0018's come in from above
    {"services"},                               # the use cases
    {"config", "db", "errors", "extensions", "request_args", "request_log", "schemas",
     "security_headers", "auth", "sessions", "ingest", "inputs", "control", "streaming", "ui",
     "api_docs"},                               # the web, and db.py's wiring of the layers
    {"cli", "samples"},                         # operator commands and the demo's data
    {"__init__"},                               # create_app: blueprints and commands
    {"console", "client"},                      # the `turnlog` command and the runner
]
LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def part_of(path):
    """The part of app/ that the module at `path` belongs to."""
    first = path.relative_to(APP).parts[0]
    return first.removesuffix(".py")


def imported_parts(path):
    """(line, imported module, part of app/) for each import of app/ in `path`,
    including those inside functions."""
    package = path.relative_to(APP.parent).parent.parts  # ("app", "storage", ...)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(name for name in (base, node.module) if name)
            # `from app import db` imports the module app.db, not app/__init__.py
            modules = [f"{module}.{alias.name}" for alias in node.names] if module == "app" else [module]
        else:
            continue
        for module in modules:
            names = module.split(".")
            if names[0] != "app":
                continue
            part = names[1] if len(names) > 1 else "__init__"
            if not ((APP / part).is_dir() or (APP / f"{part}.py").is_file()):
                part = "__init__"  # a name app/__init__.py defines (create_app)
            yield node.lineno, module, part


def upward_imports(paths):
    """Each import in `paths` of a part in a higher layer than the importer's own."""
    found = sorted((str(path.relative_to(APP)), line, module, part, part_of(path))
                   for path in paths
                   for line, module, part in imported_parts(path)
                   if LAYER_OF[part] > LAYER_OF[part_of(path)])
    return [f"{where}:{line}: {module} ({part} is above {importer})"
            for where, line, module, part, importer in found]


def test_every_part_of_app_has_a_layer():
    parts = {part_of(path) for path in APP.rglob("*.py")}
    assert parts - set(LAYER_OF) == set()
    assert set(LAYER_OF) - parts == set()


@pytest.mark.parametrize("part", sorted(LAYER_OF))
def test_imports_point_down(part):
    """Storage imports nothing of the use cases or the web; providers nothing of the
    use cases; the use cases nothing of the web; the bottom nothing at all."""
    paths = [APP / f"{part}.py"] if (APP / f"{part}.py").is_file() else list((APP / part).rglob("*.py"))
    assert upward_imports(paths) == []


def test_the_bottom_imports_only_the_standard_library():
    outside = sorted(
        f"{path.relative_to(APP)}: {name}"
        for path in (APP / "core").rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("app.core"))
    assert outside == []


def test_an_upward_import_inside_a_function_is_found(tmp_path, monkeypatch):
    """The check reads the whole tree: a lazy import (as migrations.py had, of the
    evidence use case) counts like one at the top."""
    storage = tmp_path / "app" / "storage"
    storage.mkdir(parents=True)
    for part in ("core", "services"):
        (tmp_path / "app" / part).mkdir()
    module = storage / "steps.py"
    module.write_text("from app.core.clock import utc_now\n\n\ndef step():\n"
                      "    from app.services import evidence\n    return evidence, utc_now\n")
    monkeypatch.setattr(sys.modules[__name__], "APP", tmp_path / "app")
    assert upward_imports([module]) == [
        "storage/steps.py:5: app.services (services is above storage)"]
