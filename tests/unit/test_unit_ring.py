"""tests/unit is pure: no test here opens a database, directly or through a fixture
(those tests live in tests/integration and run on every backend)."""
import ast
import pathlib

UNIT = pathlib.Path(__file__).resolve().parent
# Modules that open a database, and fixtures (tests/conftest.py, pytest-flask) that make
# one. Importing a repository class is fine: without a connection it reaches nothing.
DATABASE_MODULES = ("sqlalchemy", "sqlite3", "psycopg", "app.db", "app.extensions")
DATABASE_FIXTURES = {"app", "backend", "database_url", "db_path", "rows", "runner", "client"}


def imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_no_unit_test_imports_a_database_module():
    offenders = sorted(
        f"{path.name}: {module}"
        for path in UNIT.glob("test_*.py")
        for module in imports(ast.parse(path.read_text()))
        if module.startswith(DATABASE_MODULES)
    )
    assert offenders == []


def test_no_unit_test_asks_for_a_database_fixture():
    offenders = sorted(
        f"{path.name}: {node.name}({arg.arg})"
        for path in UNIT.glob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)
        for arg in node.args.args
        if arg.arg in DATABASE_FIXTURES
    )
    assert offenders == []
