"""``icecompat iceberg`` on one table and on several, without Spark: --dry-run changes nothing (the
table's files and the catalog's database byte for byte) and says what the real run then does; the
catalog identifier is found by the one rule (``--identifier``, else the table property); --json.

Tables are synthetic (tests/cli/synthetic.py); the catalog is pyiceberg's SQL catalog on a sqlite
file, configured through pyiceberg's environment variables as a user would.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog, load_catalog

from icecompat_writer.cli.main import EXIT_ERROR, EXIT_OK, main
from tests import support
from tests.cli.synthetic import build_table

IDENT = "icecompat.iceberg.identifier"


@pytest.fixture
def catalog_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The catalog ``local``, made once before the test (so that every later run only reads or writes it)."""
    db = tmp_path / "catalog.db"
    monkeypatch.setenv("PYICEBERG_CATALOG__LOCAL__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__LOCAL__URI", f"sqlite:///{db}")
    monkeypatch.setenv("PYICEBERG_CATALOG__LOCAL__WAREHOUSE", f"file://{tmp_path / 'warehouse'}")
    _catalog(db).create_namespace("db")
    return db


def _catalog(db: Path) -> Catalog:
    return load_catalog(
        "local", type="sql", uri=f"sqlite:///{db}", warehouse=f"file://{db.parent / 'warehouse'}"
    )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_changes_nothing_and_says_what_the_real_run_does(
    tmp_path: Path, catalog_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "t"
    build_table(root, properties={IDENT: "db.t"})
    table_before, catalog_before = support.tree_digest(root), _sha(catalog_db)

    code, out, err = run(capsys, "iceberg", str(root), "--catalog", "local", "--dry-run", "--json")
    assert code == EXIT_OK, err
    plan = json.loads(out)
    assert plan["dry_run"] is True and plan["needed"] is True and plan["written"] is False
    assert plan["first_version"] == 0 and plan["delta_version"] == 0 and plan["converted_version"] is None
    assert plan["metadata_location"] == str(root / "metadata" / "v1.metadata.json")
    assert plan["catalog"] == {
        "catalog": "local",
        "identifier": "db.t",  # the table property: no --identifier needed for one table
        "action": "would register",
        "delta_version": 0,
        "catalog_delta_version": None,
    }
    code, out, err = run(capsys, "iceberg", str(root), "--catalog", "local", "--dry-run")
    assert code == EXIT_OK and "would write" in out and "db.t would be registered" in out, err
    assert support.tree_digest(root) == table_before and _sha(catalog_db) == catalog_before

    code, out, err = run(capsys, "iceberg", str(root), "--catalog", "local", "--json")
    assert code == EXIT_OK, err
    done = json.loads(out)
    assert done["written"] is True and done["metadata_location"] == plan["metadata_location"]
    assert [s["delta_version"] for s in done["snapshots"]] == [0]
    assert done["catalog"]["action"] == "registered" and done["catalog"]["identifier"] == "db.t"
    assert _catalog(catalog_db).load_table("db.t").metadata.format_version == plan["format_version"]

    after, catalog_after = support.tree_digest(root), _sha(catalog_db)
    code, out, _ = run(capsys, "iceberg", str(root), "--catalog", "local", "--dry-run", "--json")
    again = json.loads(out)
    assert code == EXIT_OK and again["needed"] is False and again["catalog"]["action"] == "current"
    assert support.tree_digest(root) == after and _sha(catalog_db) == catalog_after

    code, out, _ = run(capsys, "check", str(root), "--catalog", "local", "--json")
    state = json.loads(out)["catalog"]
    assert code == EXIT_OK and state["registered"] is True and state["delta_version"] == 0
    assert state["identifier"] == "db.t"


def test_the_identifier_is_found_one_way(
    tmp_path: Path, catalog_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named, bare = tmp_path / "named", tmp_path / "bare"
    build_table(named, properties={IDENT: "db.named"})
    build_table(bare)

    code, out, err = run(capsys, "iceberg", str(bare), "--catalog", "local")
    assert code == EXIT_ERROR and out == "" and "--identifier" in err and IDENT in err
    assert not (bare / "metadata").exists()

    code, out, err = run(capsys, "iceberg", str(named), "--catalog", "local")  # the property
    assert code == EXIT_OK and "db.named registered" in out and err == "", err
    code, out, err = run(capsys, "iceberg", str(bare), "--catalog", "local", "--identifier", "db.bare")
    assert code == EXIT_OK and "db.bare registered" in out, err
    # The command line wins over the property; the second entry is not the one the syncs move forward.
    code, out, err = run(capsys, "iceberg", str(named), "--catalog", "local", "--identifier", "db.second")
    assert code == EXIT_OK and "db.second registered" in out
    assert "not the table's icecompat.iceberg.identifier (db.named)" in err
    assert {i[-1] for i in _catalog(catalog_db).list_tables("db")} == {"named", "bare", "second"}


def test_several_tables_dry_run_and_json_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    build_table(one)
    build_table(two)
    before = support.tree_digest(tmp_path)
    code, out, err = run(capsys, "-q", "iceberg", str(one), str(two), "--dry-run", "--json")
    assert code == EXIT_OK and err == ""
    assert [t["verdict"] for t in json.loads(out)["outcomes"]] == ["would convert", "would convert"]
    assert support.tree_digest(tmp_path) == before

    code, out, err = run(capsys, "iceberg", str(tmp_path / "missing"), "--json")
    assert code == EXIT_ERROR and json.loads(out)["error"]["table"] == str(tmp_path / "missing")
    assert err.startswith("icecompat iceberg: ")
