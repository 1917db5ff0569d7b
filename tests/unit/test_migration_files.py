"""The migration files themselves: names, numbering, statement splitting."""
import pytest

from app.core.errors import MigrationError
from app.storage import migrations

MIGRATIONS_DIR = migrations.Path(__file__).resolve().parents[2] / "migrations"


def test_project_migrations_are_numbered_from_one_without_gaps():
    found = migrations.discover(MIGRATIONS_DIR)
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert all(m.sql.strip() for m in found)


def test_gap_in_numbers_is_refused(tmp_path):
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (x INTEGER);")
    (tmp_path / "0003_c.sql").write_text("CREATE TABLE c (x INTEGER);")
    with pytest.raises(MigrationError, match="without gaps"):
        migrations.discover(tmp_path)


def test_badly_named_file_is_refused(tmp_path):
    (tmp_path / "1_a.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="name must look like"):
        migrations.discover(tmp_path)


def test_split_keeps_trigger_bodies_whole_and_drops_comments():
    sql = """-- header
CREATE TABLE t (x INTEGER);
CREATE TRIGGER trg AFTER INSERT ON t BEGIN
    UPDATE t SET x = x + 1;
END;
"""
    statements = migrations.split_statements(sql)
    assert statements[0] == "CREATE TABLE t (x INTEGER);"
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")
    assert len(statements) == 2


def test_unterminated_statement_is_refused():
    with pytest.raises(MigrationError, match="unterminated"):
        migrations.split_statements("CREATE TABLE t (x INTEGER)")


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(MigrationError, match="does not exist"):
        migrations.discover(tmp_path / "nowhere")


def test_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "migrations").write_text("")
    with pytest.raises(MigrationError, match="does not exist"):
        migrations.discover(tmp_path / "migrations")


def test_folder_without_sql_files_is_refused(tmp_path):
    (tmp_path / "README.md").write_text("no migrations here")
    with pytest.raises(MigrationError, match="no .sql files"):
        migrations.discover(tmp_path)


def test_each_database_runs_its_own_file_of_a_per_database_migration(tmp_path):
    (tmp_path / "0001_a.sql").write_text("CREATE TABLE a (x INTEGER);")
    (tmp_path / "0002_find.sqlite.sql").write_text("-- sqlite\nSELECT 1;")
    (tmp_path / "0002_find.postgresql.sql").write_text("-- postgresql\nSELECT 2;")
    for dialect in ("sqlite", "postgresql"):
        found = migrations.discover(tmp_path, dialect)
        assert [(m.version, m.name) for m in found] == [(1, "a"), (2, "find")]
        assert found[1].sql.startswith(f"-- {dialect}\n")


@pytest.mark.parametrize("names, message", [
    (["0001_find.sqlite.sql"], "one file per database"),
    (["0001_find.sql", "0001_find.sqlite.sql", "0001_find.postgresql.sql"],
     "both portable and per database"),
    (["0001_find.sqlite.sql", "0001_seek.postgresql.sql"], "different names"),
    (["0001_a.sql", "0001_b.sql"], "twins"),
])
def test_inconsistent_per_database_files_are_refused(tmp_path, names, message):
    for name in names:
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=message):
        migrations.discover(tmp_path)


def test_project_migrations_resolve_for_every_database():
    for dialect in migrations.DIALECTS:
        found = migrations.discover(MIGRATIONS_DIR, dialect)
        assert [m.version for m in found] == list(range(1, len(found) + 1))
