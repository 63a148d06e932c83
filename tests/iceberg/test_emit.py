"""Proof by Iceberg readers: tables written by real delta-spark, read back by pyiceberg and DuckDB."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo, GreaterThan, GreaterThanOrEqual
from pyiceberg.types import ListType, MapType, NestedField, StructType
from pyspark.sql import SparkSession

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import PROP_DELTA_VERSION, main, write_iceberg_metadata
from icecompat_writer.storage import io_for

from ._support import (
    duckdb_rows,
    latest_metadata,
    live_files_with_lineage,
    metadata_json,
    normalise,
    spark_rows,
    static_table,
)

pytestmark = pytest.mark.spark

LONG_NAME = "a string that is clearly longer than thirty-two characters"

RICH_DDL = """
CREATE TABLE delta.`{path}` (
  id BIGINT NOT NULL, b TINYINT, s SMALLINT, name STRING, ts TIMESTAMP, tsn TIMESTAMP_NTZ, d DATE,
  dec DECIMAL(10,2), bin BINARY, f FLOAT, dbl DOUBLE, flag BOOLEAN,
  st STRUCT<x: INT, y: STRING>, arr ARRAY<INT>, m MAP<STRING, ARRAY<BIGINT>>, part STRING)
USING delta PARTITIONED BY (part)
TBLPROPERTIES ('delta.columnMapping.mode' = 'id', 'delta.enableIcebergCompatV2' = 'true')
"""

RICH_ROWS = f"""
INSERT INTO delta.`{{path}}` VALUES
 (1, 1, 2, 'alpha', TIMESTAMP'2024-01-01 10:00:00.123456', TIMESTAMP_NTZ'2024-01-01 10:00:00.123456',
  DATE'2024-01-01', 12.34, X'0102', 1.5, 2.5, true, named_struct('x', 1, 'y', 'a'), array(1, 2),
  map('k', array(1L, 2L)), 'p1'),
 (2, NULL, NULL, '{LONG_NAME}', NULL, NULL, NULL, -0.01, NULL, -0.0, NULL, false, NULL, NULL, NULL, 'p2'),
 (3, -128, -32768, 'gamma', TIMESTAMP'1969-12-31 23:59:59.999999', TIMESTAMP_NTZ'1900-01-01 00:00:00',
  DATE'1900-01-01', 99999999.99, X'', 3.4e38, -1e300, NULL, named_struct('x', NULL, 'y', NULL),
  array(NULL), map('z', array()), 'p1')
"""


@pytest.fixture(scope="module")
def rich_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("iceberg_rich") / "t"
    spark.sql(RICH_DDL.format(path=path))
    spark.sql(RICH_ROWS.format(path=path))
    result = write_iceberg_metadata(path)
    assert result.written and result.format_version == 2
    yield path


def _delta_df(spark: SparkSession, path: Path, version: int | None = None) -> Any:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(str(path))


def test_pyiceberg_reads_what_spark_reads(spark: SparkSession, rich_table: Path) -> None:
    expected = spark_rows(_delta_df(spark, rich_table))
    got = normalise(static_table(rich_table).scan().to_arrow())
    assert len(expected) == 3
    assert got == expected


def test_duckdb_reads_what_spark_reads(spark: SparkSession, rich_table: Path) -> None:
    expected = spark_rows(_delta_df(spark, rich_table))
    assert duckdb_rows(rich_table) == expected


def test_field_ids_are_the_delta_column_mapping_ids(rich_table: Path) -> None:
    delta_schema = read_snapshot(rich_table, io=io_for(rich_table)).metadata.schema
    iceberg_schema = static_table(rich_table).schema()
    checked = 0

    def check(delta_field: dict[str, Any], ice: NestedField) -> None:
        nonlocal checked
        meta = delta_field["metadata"]
        assert ice.field_id == meta["delta.columnMapping.id"], delta_field["name"]
        assert ice.required == (not delta_field["nullable"])
        nested = meta.get("delta.columnMapping.nested.ids", {})
        phys = meta["delta.columnMapping.physicalName"]
        dtype, itype = delta_field["type"], ice.field_type
        checked += 1
        if isinstance(itype, ListType):
            assert itype.element_id == nested[f"{phys}.element"]
            checked += 1
        elif isinstance(itype, MapType):
            assert (itype.key_id, itype.value_id) == (nested[f"{phys}.key"], nested[f"{phys}.value"])
            assert isinstance(itype.value_type, ListType)
            assert itype.value_type.element_id == nested[f"{phys}.value.element"]
            checked += 3
        elif isinstance(itype, StructType):
            for sub in dtype["fields"]:
                check(sub, itype.field_by_name(sub["name"]))

    for f in delta_schema["fields"]:
        check(f, iceberg_schema.find_field(f["name"]))
    assert checked == 22  # 16 top-level + 2 struct children + 1 list element + key/value/element of the map
    types = {f.name: str(f.field_type) for f in iceberg_schema.fields}
    assert (types["b"], types["ts"], types["tsn"], types["dec"]) == (
        "int",
        "timestamptz",
        "timestamp",
        "decimal(10, 2)",
    )


def test_partition_filter_plans_fewer_files(spark: SparkSession, rich_table: Path) -> None:
    table = static_table(rich_table)
    adds = read_snapshot(rich_table, io=io_for(rich_table)).add_files
    in_p2 = [a for a in adds if "p2" in a.partition_values.values()]
    all_files = list(table.scan().plan_files())
    p2_files = list(table.scan(row_filter=EqualTo("part", "p2")).plan_files())
    assert len(all_files) == len(adds) >= 2
    assert len(p2_files) == len(in_p2) == 1
    expected = spark_rows(_delta_df(spark, rich_table).where("part = 'p2'"))
    assert normalise(table.scan(row_filter=EqualTo("part", "p2")).to_arrow()) == expected
    spec = table.spec()
    assert [(f.source_id, f.field_id, str(f.transform)) for f in spec.fields] == [
        (table.schema().find_field("part").field_id, 1000, "identity")
    ]


def test_bounds_never_hide_rows_delta_stats_truncated(rich_table: Path) -> None:
    table = static_table(rich_table)
    # Delta's statistics say 10:00:00.123 for a value of 10:00:00.123456: an unwidened upper bound
    # would prune the file for this filter and lose row 1.
    cut = "2024-01-01T10:00:00.123400+00:00"
    rows = normalise(table.scan(row_filter=GreaterThanOrEqual("ts", cut)).to_arrow())
    assert [r["id"] for r in rows] == [1]
    rows = normalise(
        table.scan(row_filter=GreaterThanOrEqual("tsn", "2024-01-01T10:00:00.123400")).to_arrow()
    )
    assert [r["id"] for r in rows] == [1]
    assert [r["id"] for r in duckdb_rows(rich_table, "ts >= TIMESTAMPTZ '2024-01-01 10:00:00.1234+00'")] == [
        1
    ]
    # The metrics are used at all: a filter above every value prunes every file.
    assert list(table.scan(row_filter=GreaterThan("ts", "2024-01-01T10:00:01+00:00")).plan_files()) == []
    # A string maximum Delta may have cut is not used as an upper bound; the long value is still found.
    rows = normalise(table.scan(row_filter=EqualTo("name", LONG_NAME)).to_arrow())
    assert [r["id"] for r in rows] == [2]
    name_id = table.schema().find_field("name").field_id
    p2 = next(t.file for t in table.scan().plan_files() if t.file.partition[0] == "p2")
    assert name_id in p2.lower_bounds and name_id not in p2.upper_bounds
    assert p2.null_value_counts[table.schema().find_field("ts").field_id] == 1
    assert p2.record_count == 1


def test_name_mapping_and_delta_version_properties(rich_table: Path) -> None:
    meta = metadata_json(rich_table)
    props = meta["properties"]
    assert props[PROP_DELTA_VERSION] == "1"
    mapping = json.loads(props["schema.name-mapping.default"])
    delta_schema = read_snapshot(rich_table, io=io_for(rich_table)).metadata.schema
    by_id = {m["field-id"]: m for m in mapping}
    for f in delta_schema["fields"]:
        meta_f = f["metadata"]
        assert by_id[meta_f["delta.columnMapping.id"]]["names"] == [
            meta_f["delta.columnMapping.physicalName"]
        ]
    assert meta["format-version"] == 2 and meta["location"] == f"file://{rich_table}"
    assert (rich_table / "metadata" / "version-hint.text").read_text() == "1"


def test_rerun_without_new_commits_writes_nothing(rich_table: Path) -> None:
    before = sorted(p.name for p in (rich_table / "metadata").iterdir())
    result = write_iceberg_metadata(rich_table)
    assert not result.written and result.snapshots == ()
    assert result.metadata_path == latest_metadata(rich_table)
    assert sorted(p.name for p in (rich_table / "metadata").iterdir()) == before


def _append(spark: SparkSession, path: Path, rows: list[tuple], columns: list[str]) -> None:
    df = spark.createDataFrame(rows, ",".join(columns)).coalesce(1)
    df.write.format("delta").mode("append").save(str(path))


def test_incremental_conversion_adds_one_snapshot_per_delta_version(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "inc"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, part STRING) USING delta PARTITIONED BY (part) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableIcebergCompatV2' = 'true')"
    )
    cols = ["id long", "v string", "part string"]
    _append(spark, path, [(1, "a", "x"), (6, "f", "x"), (2, "b", "y"), (3, "c", "z")], cols)  # v1
    first = write_iceberg_metadata(path)
    assert [s.delta_version for s in first.snapshots] == [0, 1]

    _append(spark, path, [(4, "d", "x")], cols)  # v2: append
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (extra INT)")  # v3: schema only
    _append(spark, path, [(5, "e", "y", 50)], [*cols, "extra int"])  # v4: append, new column
    spark.sql(f"DELETE FROM delta.`{path}` WHERE part = 'z'")  # v5: whole file removed
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")  # v6: file rewritten without id 1
    second = write_iceberg_metadata(path)
    assert second.metadata_version == 2
    assert [s.delta_version for s in second.snapshots] == [2, 3, 4, 5, 6]
    assert [s.operation for s in second.snapshots] == ["append", "append", "append", "delete", "overwrite"]

    meta = metadata_json(path)
    snaps = meta["snapshots"]
    assert len(snaps) == 7
    assert [s["sequence-number"] for s in snaps] == list(range(7))
    assert meta["last-sequence-number"] == 6
    assert [s.get("parent-snapshot-id") for s in snaps[1:]] == [s["snapshot-id"] for s in snaps[:-1]]
    assert meta["current-snapshot-id"] == snaps[-1]["snapshot-id"]
    assert [e["metadata-file"] for e in meta["metadata-log"]] == [f"file://{path}/metadata/v1.metadata.json"]
    assert len(meta["schemas"]) == 2 and meta["current-schema-id"] == 1
    assert snaps[4]["schema-id"] == 1 and snaps[2]["schema-id"] == 0

    # Every snapshot reads like Delta's time travel to the same version, the deletes included.
    table = static_table(path)
    for version, snap in enumerate(snaps):
        expected_df = _delta_df(spark, path, version)
        got = table.scan(snapshot_id=snap["snapshot-id"]).to_arrow()
        assert normalise(got, expected_df.columns) == spark_rows(expected_df), f"Delta version {version}"
    assert duckdb_rows(path) == spark_rows(_delta_df(spark, path))

    # The removed files are recorded as DELETED entries of the snapshot that removed them.
    table_meta = table.metadata
    delete_snap = table_meta.snapshot_by_id(snaps[5]["snapshot-id"])
    assert delete_snap is not None and delete_snap.summary is not None
    assert delete_snap.summary["deleted-data-files"] == "1"
    deleted = [
        e
        for m in delete_snap.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=False)
        if e.status.value == 2
    ]
    assert len(deleted) == 1 and deleted[0].snapshot_id == snaps[5]["snapshot-id"]


def test_v3_row_lineage_matches_delta_row_tracking(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "v3"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, part INT) USING delta PARTITIONED BY (part) "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.enableIcebergCompatV3' = 'true', "
        "'delta.enableRowTracking' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 1)")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (4, 'd', 2), (5, 'e', 3)")
    spark.sql(f"UPDATE delta.`{path}` SET v = 'z' WHERE id = 1")  # copy-on-write, materialised row ids
    result = write_iceberg_metadata(path)
    assert result.format_version == 3

    meta = metadata_json(path)
    assert meta["format-version"] == 3
    snaps = meta["snapshots"]
    assert snaps[0]["first-row-id"] == 0
    for prev, nxt in itertools.pairwise(snaps):
        assert nxt["first-row-id"] == prev["first-row-id"] + prev["added-rows"]
    assert meta["next-row-id"] == snaps[-1]["first-row-id"] + snaps[-1]["added-rows"]
    snapshot = read_snapshot(path, io=io_for(path))
    high_water = json.loads(snapshot.domain_metadata["delta.rowTracking"])["rowIdHighWaterMark"]
    assert meta["next-row-id"] == high_water + 1

    # Each live file's inherited first_row_id is Delta's baseRowId.
    base_ids = {f"file://{path}/{a.path}": a.base_row_id for a in snapshot.add_files}
    files = live_files_with_lineage(path)
    assert {f["path"]: f["first_row_id"] for f in files} == base_ids

    # Row by row, Iceberg's _row_id / _last_updated_sequence_number rules give Delta's row tracking.
    iceberg: dict[int, tuple[int, int]] = {}
    id_field = static_table(path).schema().find_field("id").field_id
    for f in files:
        pf = pq.read_table(f["path"].removeprefix("file://"))
        by_id = {int(fl.metadata[b"PARQUET:field_id"]): fl.name for fl in pf.schema if fl.metadata}
        ids = pf.column(by_id[id_field]).to_pylist()
        row_ids = pf.column(by_id[2147483540]).to_pylist() if 2147483540 in by_id else [None] * len(ids)
        seqs = pf.column(by_id[2147483539]).to_pylist() if 2147483539 in by_id else [None] * len(ids)
        for pos, (rid, rseq, ident) in enumerate(zip(row_ids, seqs, ids, strict=True)):
            iceberg[ident] = (
                rid if rid is not None else f["first_row_id"] + pos,
                rseq if rseq is not None else f["data_sequence_number"],
            )
    delta_rows = spark.sql(
        f"SELECT id, _metadata.row_id AS rid, _metadata.row_commit_version AS rcv FROM delta.`{path}`"
    ).collect()
    assert iceberg == {r["id"]: (r["rid"], r["rcv"]) for r in delta_rows}
    assert len(iceberg) == 5

    expected = spark_rows(_delta_df(spark, path))
    assert normalise(static_table(path).scan().to_arrow()) == expected
    assert duckdb_rows(path) == expected


def test_table_without_column_mapping_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "plain"
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a')")
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(path)
    # It declares no profile, so it is held to the default one and refused in the catalog's words;
    # the emitter adds no rule of its own for what the catalog already says.
    assert {"ICV3-ENABLED", "ICV3-COLUMN-MAPPING-MODE", "CM-IDS-ASSIGNED"} <= set(err.value.rules)
    assert {v.profile for v in err.value.violations} == {"v3"}
    assert "default profile v3" in str(err.value)
    assert not (path / "metadata").exists()
    assert main([str(path)]) == 1


def test_cli_converts_and_reports(rich_table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(rich_table)]) == 0
    assert "already at Delta version 1" in capsys.readouterr().out
    assert main([str(rich_table), "--format-version", "3"]) == 1
    assert "ICEBERG-EMIT-FORMAT-VERSION" in capsys.readouterr().err


def test_timestamps_in_partitions_are_typed(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "tsparts"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, ts TIMESTAMP, d DATE, n INT) USING delta "
        "PARTITIONED BY (ts, d, n) TBLPROPERTIES ('delta.columnMapping.mode' = 'id', "
        "'delta.enableIcebergCompatV2' = 'true')"
    )
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (1, TIMESTAMP'2024-03-01 12:34:56.789012', DATE'2024-03-01', 7), "
        "(2, NULL, NULL, NULL)"
    )
    write_iceberg_metadata(path)
    table = static_table(path)
    expected = spark_rows(_delta_df(spark, path))
    assert normalise(table.scan().to_arrow()) == expected
    assert duckdb_rows(path) == expected
    ts = dt.datetime(2024, 3, 1, 12, 34, 56, 789012, tzinfo=dt.UTC)
    tasks = list(table.scan(row_filter=EqualTo("ts", ts.isoformat())).plan_files())
    assert len(tasks) == 1
    micros = (ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    days = (dt.date(2024, 3, 1) - dt.date(1970, 1, 1)).days
    assert tuple(tasks[0].file.partition) == (micros, days, 7)


def test_type_widening_keeps_old_files_readable_and_prunable(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "widen"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, f FLOAT) USING delta TBLPROPERTIES ("
        "'delta.columnMapping.mode' = 'id', 'delta.enableIcebergCompatV2' = 'true', "
        "'delta.enableTypeWidening' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1.5)")
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN f TYPE DOUBLE")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (5000000000, 2.5)")
    write_iceberg_metadata(path)
    table = static_table(path)
    assert [str(f.field_type) for f in table.schema().fields] == ["long", "double"]
    expected = spark_rows(_delta_df(spark, path))
    assert normalise(table.scan().to_arrow()) == expected
    assert duckdb_rows(path) == expected
    # The first file keeps its 4-byte int/float bounds, which readers promote when pruning.
    assert [r["id"] for r in normalise(table.scan(row_filter=GreaterThan("id", 3)).to_arrow())] == [
        5000000000
    ]
    assert len(list(table.scan(row_filter=GreaterThan("f", 2.0)).plan_files())) == 1
    assert [r["id"] for r in duckdb_rows(path, "f < 2.0")] == [1]
