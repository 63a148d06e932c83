"""``icecompat upgrade``: exit codes (0 upgraded or nothing to do, 1 refused, 2 usage or read errors),
stdout/stderr, --json, and a --dry-run in a real subprocess that needs no Spark.

The upgrades themselves run in-process through ``main([...])`` with the test session (the command
uses a running session instead of starting its own); tables are written by plain delta-spark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from icecompat_writer.cli.main import EXIT_ERROR, EXIT_OK, EXIT_VIOLATIONS, main
from tests import support
from tests.upgrading.tables import Tables

ICECOMPAT = Path(sys.executable).parent / "icecompat"


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    return Tables(spark, tmp_path_factory.mktemp("cli-upgrade"))


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.spark
def test_dry_run_json_in_a_subprocess_changes_nothing(tables: Tables, tmp_path: Path) -> None:
    root = tables.copy("partial", tmp_path / "partial")
    before = support.tree_digest(root)
    proc = subprocess.run(
        [str(ICECOMPAT), "upgrade", str(root), "--profile", "v3", "--dry-run", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    data = json.loads(proc.stdout)  # the whole of stdout is the one JSON document
    assert data["format"] == "icecompat-upgrade/1" and data["dry_run"] is True and data["version"] is None
    assert data["needed"] is True and data["read_version"] == 3 and data["new_table_state"] is False
    rewritten = {f["path"]: f["rules"] for f in data["files"]["rewritten"]}
    assert sorted(rewritten.values()) == [["ICV3-NUM-RECORDS"], ["ICV3-TIMESTAMP-INT64"]]
    assert len(data["files"]["recommitted"]) == 2 and data["files"]["total"] == 4
    assert data["properties"]["delta.enableIcebergCompatV3"] == "true"
    assert support.tree_digest(root) == before


@pytest.mark.spark
def test_upgrade_exits_0_and_a_second_run_is_a_no_op(
    tables: Tables, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tables.copy("name_partitioned", tmp_path / "np")
    code, out, err = run(capsys, "upgrade", str(root), "--profile", "writer-v1")
    assert code == EXIT_OK, err
    assert out.startswith(f"upgraded {root} to writer-v1: committed version 1")
    assert "new state" in out and "IWC1-PHYSICAL-NAME" in out
    assert check_table(root, "writer-v1").compliant

    log_before = support.tree_digest(root / "_delta_log")
    # Settings for a session the command would start: the test's session already runs, so they reach
    # only the package's own reads (a note says so on stderr; stdout stays one JSON document).
    conf = ["--conf", "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9"]
    code, out, err = run(capsys, "upgrade", str(root), "--profile", "writer-v1", "--json", *conf)
    assert code == EXIT_OK, err
    assert "a Spark session is already running" in err
    data = json.loads(out)
    assert data["needed"] is False and data["version"] is None and data["read_version"] == 1
    assert support.tree_digest(root / "_delta_log") == log_before


@pytest.mark.spark
def test_a_refusal_exits_1_and_names_the_rules(
    tables: Tables, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tables.copy("deletion_vectors", tmp_path / "dv")
    before = support.tree_digest(root)
    code, out, _ = run(capsys, "upgrade", str(root), "--profile", "writer-v1")
    assert code == EXIT_VIOLATIONS == 1
    assert "refused, nothing changed" in out and "IWC1-FEATURE-ALLOWLIST" in out

    code, out, _ = run(capsys, "upgrade", str(root), "--profile", "writer-v1", "--json")
    assert code == EXIT_VIOLATIONS
    refused = json.loads(out)["refused"]
    assert refused["type"] == "CompatViolation"
    assert sorted({v["rule"] for v in refused["violations"]}) == [
        "ICV2-NO-DELETION-VECTORS",
        "IWC1-FEATURE-ALLOWLIST",
    ]
    assert support.tree_digest(root) == before


@pytest.mark.spark
@pytest.mark.parametrize("dry_run", [True, False])
def test_no_table_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool) -> None:
    missing = tmp_path / "missing"
    flags = ["--dry-run"] if dry_run else []
    code, out, err = run(capsys, "upgrade", str(missing), "--profile", "v3", *flags)
    assert code == EXIT_ERROR and out == ""
    assert err.startswith("icecompat upgrade:") and "TableReadError" not in err
    code, out, _ = run(capsys, "upgrade", str(missing), "--profile", "v3", "--json", *flags)
    assert code == EXIT_ERROR and json.loads(out)["error"]["type"] == "TableReadError"
    assert not missing.exists()


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "upgrade", str(tmp_path))
    assert code == EXIT_ERROR and "--profile" in err
    code, _, err = run(capsys, "upgrade", str(tmp_path), "--profile", "v4")
    assert code == EXIT_ERROR and "invalid choice" in err
