"""Tables an older Delta writer made (pyspark 3.5 with delta-spark 3.3, Scala 2.12): upgraded under
every profile, one test per (table, profile) pair: a copy upgraded, checked compliant and read back by
delta-spark, pyiceberg, DuckDB and the REST catalog, or refused with rule ids before any file is
written and left byte-identical.

The older writer runs in its own virtual environment and JVM (``older_delta/env.sh`` builds it once
under .cache/older-delta; ``older_delta/write_tables.py`` writes the tables), never in this process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.storage import io_for
from tests import support
from tests.deltalog.foreign import delta_rows, pairs, upgrade_end_to_end
from tests.iceberg.test_sync import catalogs  # noqa: F401  (the REST catalog server fixture)

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent / "older_delta"
REPO = HERE.parents[2]
TABLES = ("older_plain", "older_typed_partitions", "older_mapped_dv", "older_compat_v2")
# (table, profile) -> the rules its upgrade is refused with; every other pair upgrades and converts.
# Under `v3` every table converts; writer-v1 refuses deletion vectors (on, and held by files).
REFUSED: dict[tuple[str, str], frozenset[str]] = {
    ("older_mapped_dv", "writer-v1"): frozenset({"ICV2-NO-DELETION-VECTORS", "IWC1-FEATURE-ALLOWLIST"}),
}


@pytest.fixture(scope="module")
def older(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The tables the older writer made (built once per module) and what it read back from them."""
    python = subprocess.run(
        ["bash", str(HERE / "env.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    out = tmp_path_factory.mktemp("older")
    subprocess.run(
        [python, str(HERE / "write_tables.py"), str(out), str(REPO / ".cache" / "older-delta" / "jars")],
        check=True,
        capture_output=True,
        text=True,
        cwd=out,
    )
    return out, json.loads((out / "written.json").read_text())


@pytest.mark.parametrize("name", TABLES)
def test_the_reader_sees_what_the_older_writer_wrote(
    spark: Any, older: tuple[Path, dict[str, Any]], name: str
) -> None:
    base, written = older
    assert written["_versions"]["spark"].startswith("3.5.")
    snap = read_snapshot(base / name, io=io_for(base / name))
    assert not snap.findings, snap.findings
    df = spark.read.format("delta").load(str(base / name))
    row = df.selectExpr("count(*) AS n", "sum(id) AS s").collect()[0]
    assert (row["n"], row["s"]) == (written[name]["rows"], written[name]["id_sum"])
    if name != "older_mapped_dv":  # deletion vectors: numRecords counts the deleted rows too
        assert sum(a.num_records or 0 for a in snap.add_files) == written[name]["rows"]


@pytest.fixture(scope="module")
def older_rows(spark: Any, older: tuple[Path, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """What delta-spark 4.4 reads from each table, read once for the module."""
    return {name: delta_rows(spark, older[0] / name) for name in TABLES}


@pytest.mark.parametrize(("name", "profile"), pairs(TABLES))
def test_upgrade_end_to_end_or_refuse(
    spark: Any,
    older: tuple[Path, dict[str, Any]],
    older_rows: dict[str, list[dict[str, Any]]],
    name: str,
    profile: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    def rest() -> Any:  # the REST catalog server starts only when a pair is read through it
        return request.getfixturevalue("catalogs").rest()

    refused = REFUSED.get((name, profile))
    upgrade_end_to_end(spark, older[0] / name, tmp_path / name, profile, refused, older_rows[name], rest)
    if name == "older_compat_v2":  # writer-v1 builds on IcebergCompatV2; v3 and writer-v3 retire it
        config = support.latest(tmp_path / name, "metaData")["configuration"]
        assert config["delta.enableIcebergCompatV2"] == ("true" if profile == "writer-v1" else "false")
