"""Tables other writers made, with their own settings: read, checked, upgraded and read as Iceberg.

delta-spark 4.4 tables whose checkpoints keep statistics only as structs (``writeStatsAsJson=false``)
or not at all (both ``writeStatsAs*`` false), in every checkpoint shape it writes (classic, multi-part,
V2 with sidecars and a JSON or Parquet top-level file), with in-commit timestamps and a log
compaction file built by hand (delta-spark 4.4 writes none); and delta-rs tables with its own log and
checkpoint writer. For each: what the reader counts equals what delta-spark reports, the checker
never calls a file stats-less, and upgrade -> check -> Iceberg metadata -> pyiceberg gives the rows
delta-spark reads. Every table is built once for the module.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog import FindingCode, read_snapshot
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.upgrading import upgrade_table
from tests import support
from tests.iceberg._support import normalise, spark_rows, static_table
from tests.support import session_conf

pytestmark = pytest.mark.spark

SELECT = (
    "SELECT id, cast(id AS STRING) AS s, "
    "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts, "
    "cast(id AS DECIMAL(10,2)) AS dec, IF(id % 2 = 0, 'a', 'b') AS p FROM range({start}, {end}, 1, 2)"
)
NO_JSON = "'delta.checkpoint.writeStatsAsJson'='false'"
NO_STATS = f"{NO_JSON}, 'delta.checkpoint.writeStatsAsStruct'='false'"

# name -> (table properties, partitioned, Spark settings while writing, what the checkpoint keeps)
SPARK_TABLES: dict[str, tuple[str, bool, dict[str, str], str]] = {
    "struct_stats": (NO_JSON, True, {}, "struct"),
    "no_stats": (NO_STATS, False, {}, "none"),
    "multipart": (NO_JSON, False, {"spark.databricks.delta.checkpoint.partSize": "2"}, "struct"),
    "v2_parquet": (
        f"{NO_JSON}, 'delta.checkpointPolicy'='v2'",
        True,
        {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "parquet"},
        "struct",
    ),
    "v2_json_no_stats": (
        f"{NO_STATS}, 'delta.checkpointPolicy'='v2'",
        False,
        {"spark.databricks.delta.checkpointV2.topLevelFileFormat": "json"},
        "none",
    ),
    "ict_compacted": (f"{NO_JSON}, 'delta.enableInCommitTimestamps'='true'", True, {}, "struct"),
}
RS_TABLES = ("rs_plain", "rs_partitioned")


def sql(spark: Any, text: str) -> None:
    spark.sql(text).collect()


def build_spark_table(spark: Any, root: Path, name: str) -> None:
    props, partitioned, conf, _ = SPARK_TABLES[name]
    compacted = name == "ict_compacted"
    interval = 2 if compacted else 1  # the compaction must cover commits after the checkpoint
    with session_conf(spark, conf):
        sql(
            spark,
            f"CREATE TABLE delta.`{root}` USING delta {'PARTITIONED BY (p) ' if partitioned else ''}"
            f"TBLPROPERTIES ('delta.checkpointInterval'='{interval}', {props}) "
            f"AS {SELECT.format(start=0, end=6)}",
        )
        sql(spark, f"INSERT INTO delta.`{root}` {SELECT.format(start=6, end=9)}")
        if compacted:
            for start in (9, 11, 13):  # versions 2 (checkpointed), 3 and 4
                sql(spark, f"INSERT INTO delta.`{root}` {SELECT.format(start=start, end=start + 2)}")
    if compacted:
        compact(root, 3, 4)


def compact(root: Path, first: int, last: int) -> None:
    """A log compaction file for commits ``first..last`` (PROTOCOL.md "Log Compaction Files"): their
    reconciled actions, commitInfo dropped; the commits stay, so delta-spark reads the same table."""
    net: dict[Any, dict[str, Any]] = {}
    for actions in support.commits(root)[first : last + 1]:
        for action in actions:
            ((kind, value),) = action.items()
            if kind in ("add", "remove"):
                net[("file", value["path"])] = action
            elif kind in ("protocol", "metaData"):
                net[(kind,)] = action
            elif kind == "domainMetadata":
                net[("domain", value["domain"])] = action
    name = f"{first:020d}.{last:020d}.compacted.json"
    (root / "_delta_log" / name).write_text("".join(json.dumps(a) + "\n" for a in net.values()))


def build_rs_table(root: Path, name: str) -> None:
    from deltalake import DeltaTable, write_deltalake

    def rows(start: int, end: int) -> pa.Table:
        ids = list(range(start, end))
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "s": pa.array([str(i) for i in ids]),
                "ts": pa.array(
                    [1_704_067_200_000_000 + i * 1_000_000 for i in ids], pa.timestamp("us", "UTC")
                ),
                "p": pa.array(["a" if i % 2 == 0 else "b" for i in ids]),
            }
        )

    partition_by = ["p"] if name == "rs_partitioned" else None
    write_deltalake(str(root), rows(0, 6), partition_by=partition_by)
    write_deltalake(str(root), rows(6, 9), partition_by=partition_by, mode="append")
    DeltaTable(str(root)).create_checkpoint()
    write_deltalake(str(root), rows(9, 11), partition_by=partition_by, mode="append")


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("foreign")
    out: dict[str, Path] = {}
    for name in SPARK_TABLES:
        out[name] = base / name
        build_spark_table(spark, out[name], name)
    for name in RS_TABLES:
        out[name] = base / name
        build_rs_table(out[name], name)
    return out


def delta_spark_counts(spark: Any, root: Path) -> tuple[int, int]:
    """(files, rows) as delta-spark reports them: DESCRIBE DETAIL and a count."""
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, str(root)).detail().collect()[0]
    return int(detail["numFiles"]), spark.read.format("delta").load(str(root)).count()


def commit_stats(root: Path) -> dict[str, dict[str, Any]]:
    """Each live file's stats exactly as the commit that added it wrote them."""
    return {a["path"]: json.loads(a["stats"]) for a in support.live_adds(root) if a.get("stats")}


@pytest.mark.parametrize("name", [*SPARK_TABLES, *RS_TABLES])
def test_reader_and_checker_count_what_delta_spark_counts(
    spark: Any, tables: dict[str, Path], name: str
) -> None:
    root = tables[name]
    snap = read_snapshot(root)
    keeps = SPARK_TABLES[name][3] if name in SPARK_TABLES else "json"
    assert snap.checkpoint_version is not None
    assert snap.stats_lost == frozenset()
    assert all(a.num_records is not None for a in snap.add_files)
    # every file's stats read back as its commit wrote them: from the struct, the JSON or the commit
    written = commit_stats(root)
    for add in snap.add_files:
        assert json.loads(add.stats or "null") == written[add.path], add.path
    codes = [f.code for f in snap.findings]
    assert codes == ([FindingCode.STATS_FROM_COMMITS] if keeps == "none" else [])
    files, rows = delta_spark_counts(spark, root)
    assert len(snap.add_files) == files
    assert sum(a.num_records or 0 for a in snap.add_files) == rows
    report = check_table(root)
    rules = {v.rule for v in report.violations}
    assert not {r for r in rules if r.endswith("-NUM-RECORDS")}, report.render_text()
    assert ("DELTA-CHECKPOINT-STATS" in rules) == (keeps == "none")
    assert report.files_total == files and not report.errors


@pytest.mark.parametrize("name", [*SPARK_TABLES, *RS_TABLES])
def test_upgrade_check_iceberg_read(spark: Any, tables: dict[str, Path], name: str, tmp_path: Path) -> None:
    root = tmp_path / name
    shutil.copytree(tables[name], root)
    expected = spark_rows(spark.read.format("delta").load(str(root)))
    result = upgrade_table(spark, root, "v3")
    assert result.version is not None
    config = support.latest(root, "metaData")["configuration"]
    if name in SPARK_TABLES and SPARK_TABLES[name][3] == "none":
        assert config["delta.checkpoint.writeStatsAsJson"] == "true"
        assert "DELTA-CHECKPOINT-STATS" in {c.rule for c in result.changes}
    report = check_table(root, "v3")
    assert report.compliant, report.render_text()
    assert spark_rows(spark.read.format("delta").load(str(root))) == expected
    write_iceberg_metadata(root)
    got = normalise(static_table(root).scan().to_arrow(), list(expected[0]))
    assert got == expected
