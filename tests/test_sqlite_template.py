"""The migrated SQLite test database kept between runs is named by what its contents depend on
(tests/conftest.py): a changed or added migration, or a changed lock file, names another one."""

from __future__ import annotations

from tests.conftest import sqlite_template


def test_a_changed_or_added_migration_or_lock_file_names_another_template(tmp_path):
    (tmp_path / "app" / "migrations").mkdir(parents=True)
    (tmp_path / "common").mkdir()
    first = tmp_path / "app" / "migrations" / "0001_initial.py"
    first.write_text("operations = []\n")
    (tmp_path / "common" / "migration_ops.py").write_text("")
    (tmp_path / "requirements.lock").write_text("django==5.2\n")
    names = [sqlite_template(tmp_path)]
    assert sqlite_template(tmp_path) == names[0]  # the same inputs, the same template
    first.write_text("operations = ['changed']\n")
    names.append(sqlite_template(tmp_path))
    (tmp_path / "app" / "migrations" / "0002_more.py").write_text("operations = []\n")
    names.append(sqlite_template(tmp_path))
    (tmp_path / "common" / "migration_ops.py").write_text("# changed\n")
    names.append(sqlite_template(tmp_path))
    (tmp_path / "requirements.lock").write_text("django==5.2.1\n")
    names.append(sqlite_template(tmp_path))
    assert len(set(names)) == len(names)
    assert all(n.parent == tmp_path / "var" / "test-databases" for n in names)
