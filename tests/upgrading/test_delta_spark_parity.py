"""Tables delta-spark 4.4 wrote that it would refuse to upgrade or write under a profile, and tables of
an older IcebergCompat version: the upgrade (and compat_write) either commits a compliant table that
delta-spark reads back unchanged, or refuses with the rule ids before any file exists, leaving every
byte of the table as it was. No raw engine error reaches the caller.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.upgrading import upgrade_table
from icecompat_writer.writing.api import compat_write
from tests import support
from tests.iceberg._support import duckdb_rows, normalise, spark_rows, static_table
from tests.upgrading.tables import MICROS, sql

ROWS = "SELECT id, cast(id AS STRING) AS s FROM range(0, 4, 1, 1)"
SOURCES = {
    "decimal_partitions": (
        "SELECT id, cast(id / 3 AS decimal(12,5)) AS d1, cast(id AS decimal(38,18)) AS d2 "
        "FROM range(0, 4, 1, 1)",
        "PARTITIONED BY (d1, d2) TBLPROPERTIES ('delta.columnMapping.mode'='name')",
        {},
    ),
    "collated": (
        "SELECT id, cast(id AS STRING) COLLATE UTF8_LCASE AS s, cast(id AS STRING) COLLATE UNICODE AS u "
        "FROM range(0, 4, 1, 1)",
        "",
        # delta-spark 4.4's own type check refuses to create it; a table written with it off, as found
        {"spark.databricks.delta.schema.typeCheck.enabled": "false"},
    ),
    "change_data_feed": (ROWS, "TBLPROPERTIES ('delta.enableChangeDataFeed'='true')", {}),
    "variant": ("SELECT id, parse_json(concat('{\"a\":', id, '}')) AS v FROM range(0, 4, 1, 1)", "", {}),
    "compat_v1": (
        ROWS,
        "TBLPROPERTIES ('delta.columnMapping.mode'='name', 'delta.enableIcebergCompatV1'='true')",
        {},
    ),
    "compat_v2": (
        ROWS,
        "TBLPROPERTIES ('delta.columnMapping.mode'='id', 'delta.enableIcebergCompatV2'='true')",
        {},
    ),
}


@pytest.fixture(scope="module")
def sources(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("parity")
    out = {}
    for name, (select, props, confs) in SOURCES.items():
        root = base / name
        sql(spark, f"CREATE TABLE delta.`{root}` USING delta {props} AS {select}", {**MICROS, **confs})
        out[name] = root
    return out


def copy(sources: dict[str, Path], name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sources[name], tmp_path / name))


def refused_upgrade(spark: SparkSession, root: Path, profile: str) -> CompatViolation:
    before = support.tree_digest(root)
    with pytest.raises(CompatViolation) as info:
        upgrade_table(spark, root, profile)
    assert type(info.value) is CompatViolation
    assert support.tree_digest(root) == before, "a refused upgrade leaves every byte of the table"
    return info.value


def rows(spark: SparkSession, root: Path) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(str(root)).collect())


@pytest.mark.spark
def test_decimal_partition_columns_are_refused_before_any_file(
    spark: SparkSession, sources: dict[str, Path], tmp_path: Path
) -> None:
    root = copy(sources, "decimal_partitions", tmp_path)
    err = refused_upgrade(spark, root, "v3")
    assert err.rules == ["DELTA-SPARK-DECIMAL-PARTITION"]
    assert [v.path for v in err.violations] == ["d1", "d2"]
    assert all("partition by another column" in v.fix for v in err.violations)

    # compat_write into the table, and into a new one partitioned by a decimal: refused the same way
    df = spark.read.format("delta").load(str(root))
    before = support.tree_digest(root)
    with pytest.raises(CompatViolation) as info:
        compat_write(df, str(root), mode="append", profile="v3")
    assert "DELTA-SPARK-DECIMAL-PARTITION" in info.value.rules
    assert support.tree_digest(root) == before
    with pytest.raises(CompatViolation) as info:
        compat_write(df, str(tmp_path / "new"), partition_by="d2", profile="writer-v1")
    assert info.value.rules == ["DELTA-SPARK-DECIMAL-PARTITION"]
    assert not (tmp_path / "new").exists()


@pytest.mark.spark
def test_collated_strings_are_refused_before_any_file(
    spark: SparkSession, sources: dict[str, Path], tmp_path: Path
) -> None:
    root = copy(sources, "collated", tmp_path)
    err = refused_upgrade(spark, root, "v3")
    assert err.rules == ["DELTA-SPARK-COLLATION"]
    assert [v.path for v in err.violations] == ["s", "u"]
    assert refused_upgrade(spark, root, "writer-v3").rules == ["IWC1-NO-COLLATIONS"]


@pytest.mark.spark
def test_a_variant_rewrite_under_iceberg_compat_v3_is_refused_up_front(
    spark: SparkSession, sources: dict[str, Path], tmp_path: Path
) -> None:
    root = copy(sources, "variant", tmp_path)
    err = refused_upgrade(spark, root, "v3")
    assert err.rules == ["DELTA-WRITE-VARIANT-ICEBERG-V3"]
    assert [v.path for v in err.violations] == ["v"]


@pytest.mark.spark
def test_change_data_feed_table_gets_column_mapping_in_a_commit_of_its_own(
    spark: SparkSession, sources: dict[str, Path], tmp_path: Path
) -> None:
    root = copy(sources, "change_data_feed", tmp_path)
    expected = rows(spark, root)
    before = support.tree_digest(root)
    dry = upgrade_table(None, root, "v3", dry_run=True)
    assert dry.column_mapping_first and dry.version is None and len(dry.rewritten) == 1
    assert "would be turned on first" in dry.headline()
    assert support.tree_digest(root) == before
    result = upgrade_table(spark, root, "v3")
    assert result.column_mapping_first and (result.column_mapping_version, result.version) == (1, 2)
    assert check_table(root, "v3", files="all").compliant
    assert rows(spark, root) == expected
    assert support.latest(root, "metaData")["configuration"]["delta.enableChangeDataFeed"] == "true"


@pytest.mark.spark
@pytest.mark.parametrize(
    ("source", "profile", "retired"),
    [
        ("compat_v1", "v3", "delta.enableIcebergCompatV1"),
        ("compat_v2", "v3", "delta.enableIcebergCompatV2"),
        ("compat_v2", "writer-v1", None),
        ("compat_v2", "writer-v3", "delta.enableIcebergCompatV2"),
    ],
)
def test_an_older_iceberg_compat_version_is_retired_in_the_upgrade_commit(
    spark: SparkSession,
    sources: dict[str, Path],
    tmp_path: Path,
    source: str,
    profile: str,
    retired: str | None,
) -> None:
    root = copy(sources, source, tmp_path)
    expected = rows(spark, root)
    result = upgrade_table(spark, root, profile)
    assert result.version == 1, "one commit"
    conf = support.latest(root, "metaData")["configuration"]
    if retired is not None:
        assert conf[retired] == "false"
        assert any(
            c.rule in ("ICV3-NO-OLDER-COMPAT", "ICV2-NO-V1") and retired in c.what for c in result.changes
        )
    assert check_table(root, profile, files="all").compliant
    assert rows(spark, root) == expected


@pytest.mark.spark
def test_binary_partition_values_reach_iceberg_readers_byte_exact(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "binary"
    df = spark.sql(
        "SELECT id, CASE WHEN id = 0 THEN unhex('C3A9E282AC') ELSE unhex('0102') END AS b "
        "FROM range(0, 4, 1, 1)"
    )
    compat_write(df, str(root), partition_by="b", profile="v3")
    write_iceberg_metadata(root)
    expected = spark_rows(spark.read.format("delta").load(str(root)))
    assert {r["b"] for r in expected} == {bytes.fromhex("C3A9E282AC"), b"\x01\x02"}
    assert normalise(static_table(root).scan().to_arrow()) == expected
    assert duckdb_rows(root) == expected
    partitions = {task.file.partition[0] for task in static_table(root).scan().plan_files()}
    assert partitions == {bytes.fromhex("C3A9E282AC"), b"\x01\x02"}
