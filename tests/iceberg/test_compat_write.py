"""Proof by Iceberg readers for tables written by ``compat_write``, in every profile.

Each profile gets one table with a real history (create, append, overwrite, schema evolution with
``mergeSchema``), converted twice (a first and an incremental run). pyiceberg and DuckDB then read every
snapshot, and what they read must be what delta-spark reads from the same Delta version, compared as
Arrow tables. Field ids are checked against the Delta log and the Parquet footers read directly
(``tests/support.py``), not through the package. A table that declares a profile but was then written
by plain delta-spark is refused with the catalog's rule ids, the same ones ``icecompat check`` reports.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.types import IcebergType, ListType, MapType, StructType
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icecompat_writer.checking.check import check_table
from icecompat_writer.cli.main import main as icecompat_main
from icecompat_writer.errors import CompatViolation
from icecompat_writer.iceberg import IcebergResult, write_iceberg_metadata
from icecompat_writer.writing.api import compat_write
from tests import support

from ._support import duckdb_connect, latest_metadata, live_files_with_lineage, metadata_json, static_table

pytestmark = pytest.mark.spark

PROFILES = ["v3", "writer-v1", "writer-v3"]

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType(), nullable=False),
        T.StructField("name with space", T.StringType()),
        T.StructField("part", T.StringType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("tsn", T.TimestampNTZType()),
        T.StructField("dec", T.DecimalType(10, 2)),
        T.StructField(
            "s",
            T.StructType(
                [
                    T.StructField("a", T.IntegerType()),
                    T.StructField("b", T.StructType([T.StructField("c", T.StringType())])),
                ]
            ),
        ),
        T.StructField("arr", T.ArrayType(T.StructType([T.StructField("x", T.IntegerType())]))),
        T.StructField("m", T.MapType(T.StringType(), T.ArrayType(T.IntegerType()))),
    ]
)

TS0 = dt.datetime(2024, 1, 1, 12, 0, 0)


def _rows(ids: range) -> list[tuple[Any, ...]]:
    out = []
    for i in ids:
        null = i % 5 == 4  # some nulls at every level
        out.append(
            (
                i,
                None if null else f"n{i}",
                "even" if i % 2 == 0 else "odd",
                None if null else TS0 + dt.timedelta(seconds=i, microseconds=123_456),
                dt.datetime(2024, 6, 1) + dt.timedelta(minutes=i, microseconds=7),
                decimal.Decimal(f"{i}.25"),
                None if null else (i, (f"c{i}",)),
                [(i,), None] if null else [(i,), (i + 1,)],
                {f"k{i}": None} if null else {f"k{i}": [i, i * 2]},
            )
        )
    return out


def _frame(spark: SparkSession, ids: range) -> DataFrame:
    return spark.createDataFrame(_rows(ids), SCHEMA)


def _evolved(spark: SparkSession, ids: range) -> DataFrame:
    """The frame plus a new top-level column and a new nested struct field (``mergeSchema``)."""
    return (
        _frame(spark, ids)
        .withColumn("extra", F.col("id") * 10)
        .withColumn("s", F.struct(F.col("s.a").alias("a"), F.col("s.b").alias("b"), F.lit("z").alias("z")))
    )


@dataclass
class History:
    """A compat_write table with four Delta versions and the results of its two conversions."""

    profile: str
    root: Path
    first: IcebergResult
    second: IcebergResult


@pytest.fixture(scope="module", params=PROFILES)
def history(
    request: pytest.FixtureRequest, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> History:
    profile = str(request.param)
    root = tmp_path_factory.mktemp(f"compat_{profile}") / "t"
    target = str(root)
    compat_write(_frame(spark, range(0, 6)), target, partition_by=["part"], profile=profile)  # v0
    compat_write(_frame(spark, range(6, 9)), target, mode="append", profile=profile)  # v1
    first = write_iceberg_metadata(root)
    compat_write(_frame(spark, range(20, 24)), target, mode="overwrite", profile=profile)  # v2
    compat_write(
        _evolved(spark, range(30, 33)),
        target,
        mode="append",
        profile=profile,
        options={"mergeSchema": "true"},
    )  # v3
    second = write_iceberg_metadata(root)
    return History(profile, root, first, second)


def _delta(spark: SparkSession, root: Path, version: int | None = None) -> DataFrame:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return reader.load(str(root))


def _spark_arrow(df: DataFrame) -> pa.Table:
    return df.toArrow().sort_by("id")


def _zoned(t: pa.DataType, path: str, out: dict[str, bool]) -> dict[str, bool]:
    """Path -> whether the timestamp there carries a zone, for every timestamp in a (nested) type."""
    if pa.types.is_timestamp(t):
        out[path] = t.tz is not None
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _zoned(t.field(i).type, f"{path}.{t.field(i).name}", out)
    elif pa.types.is_map(t):
        _zoned(t.key_type, f"{path}.key", out)
        _zoned(t.item_type, f"{path}.value", out)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _zoned(t.value_type, f"{path}.element", out)
    return out


def assert_same_arrow(got: pa.Table, expected: pa.Table) -> None:
    """Same columns, same rows, same values. ``got`` is cast to ``expected``'s schema first: readers
    spell the same Iceberg type differently (``large_string``, the zone name of a ``timestamptz``,
    required flags), and a cast that changed a value would fail or show up in the comparison. What a
    cast would paper over, an instant read as a local time or the reverse, is compared before."""
    got = got.select(expected.column_names).sort_by("id")
    assert got.num_rows == expected.num_rows
    for name in expected.column_names:
        want = _zoned(expected.schema.field(name).type, name, {})
        assert _zoned(got.schema.field(name).type, name, {}) == want, name
    cast = got.cast(expected.schema)
    if not cast.equals(expected):
        for name in expected.column_names:
            assert cast.column(name).to_pylist() == expected.column(name).to_pylist(), name
    assert cast.equals(expected)


def _duckdb_arrow(root: Path, where: str = "") -> pa.Table:
    con = duckdb_connect()
    try:
        sql = f"SELECT * FROM iceberg_scan('{latest_metadata(root)}')" + (f" WHERE {where}" if where else "")
        return con.execute(sql).fetch_arrow_table()
    finally:
        con.close()


# -------------------------------------------------------------------------------------------------


def test_conversions_follow_the_delta_history(history: History) -> None:
    """One snapshot per Delta version, in two runs; format v2 for writer-v1, v3 for the V3 profiles."""
    fv = 2 if history.profile == "writer-v1" else 3
    assert (history.first.format_version, history.second.format_version) == (fv, fv)
    assert [s.delta_version for s in history.first.snapshots] == [0, 1]
    assert [s.delta_version for s in history.second.snapshots] == [2, 3]
    assert [s.operation for s in history.first.snapshots + history.second.snapshots] == [
        "append",
        "append",
        "overwrite",
        "append",
    ]
    meta = metadata_json(history.root)
    assert meta["format-version"] == fv and len(meta["metadata-log"]) == 1
    assert [s["sequence-number"] for s in meta["snapshots"]] == [0, 1, 2, 3]
    assert len(meta["schemas"]) == 2 and meta["current-schema-id"] == 1
    assert check_table(history.root).compliant  # what was converted is what the checker accepts


def test_every_snapshot_reads_what_spark_reads_at_that_version(spark: SparkSession, history: History) -> None:
    """After the appends, the overwrite and the schema evolution: pyiceberg's scan of each snapshot is
    delta-spark's read of the same version (time travel on both sides)."""
    table = static_table(history.root)
    snapshots = table.metadata.snapshots
    assert len(snapshots) == 4
    for version, snap in enumerate(snapshots):
        expected = _spark_arrow(_delta(spark, history.root, version))
        assert expected.num_rows == [6, 9, 4, 7][version]
        assert_same_arrow(table.scan(snapshot_id=snap.snapshot_id).to_arrow(), expected)
    latest = _spark_arrow(_delta(spark, history.root))
    assert "extra" in latest.column_names and latest.column("extra").null_count == 4
    assert_same_arrow(table.scan().to_arrow(), latest)


def test_duckdb_reads_what_spark_reads(spark: SparkSession, history: History) -> None:
    expected = _spark_arrow(_delta(spark, history.root))
    assert_same_arrow(_duckdb_arrow(history.root), expected)
    evens = _spark_arrow(_delta(spark, history.root).where("part = 'even'"))
    assert evens.column("id").to_pylist() == [20, 22, 30, 32]
    assert_same_arrow(_duckdb_arrow(history.root, "part = 'even'"), evens)


def _iceberg_ids(fields: Any, prefix: str = "") -> dict[str, int]:
    """Logical path -> id over an Iceberg schema, list elements and map keys/values included."""
    out: dict[str, int] = {}

    def walk_type(t: IcebergType, path: str) -> None:
        if isinstance(t, StructType):
            out.update(_iceberg_ids(t.fields, path + "."))
        elif isinstance(t, ListType):
            out[f"{path}.element"] = t.element_id
            walk_type(t.element_type, f"{path}.element")
        elif isinstance(t, MapType):
            out[f"{path}.key"] = t.key_id
            out[f"{path}.value"] = t.value_id
            walk_type(t.key_type, f"{path}.key")
            walk_type(t.value_type, f"{path}.value")

    for f in fields:
        out[prefix + f.name] = f.field_id
        walk_type(f.field_type, prefix + f.name)
    return out


def _delta_ids(schema: dict[str, Any]) -> dict[str, int]:
    """Logical path -> id from the Delta schema JSON, nested ids looked up on the owning struct field."""
    out: dict[str, int] = {}

    def walk_type(t: Any, path: str, key: str, nested: dict[str, int]) -> None:
        if not isinstance(t, dict):
            return
        if t["type"] == "struct":
            walk_fields(t["fields"], path + ".")
        elif t["type"] == "array":
            out[f"{path}.element"] = nested[f"{key}.element"]
            walk_type(t["elementType"], f"{path}.element", f"{key}.element", nested)
        elif t["type"] == "map":
            out[f"{path}.key"] = nested[f"{key}.key"]
            out[f"{path}.value"] = nested[f"{key}.value"]
            walk_type(t["keyType"], f"{path}.key", f"{key}.key", nested)
            walk_type(t["valueType"], f"{path}.value", f"{key}.value", nested)

    def walk_fields(fields: list[dict[str, Any]], prefix: str) -> None:
        for f in fields:
            meta = f["metadata"]
            out[prefix + f["name"]] = int(meta["delta.columnMapping.id"])
            nested = meta.get("delta.columnMapping.nested.ids") or {}
            walk_type(f["type"], prefix + f["name"], meta["delta.columnMapping.physicalName"], nested)

    walk_fields(schema["fields"], "")
    return out


def test_field_ids_are_delta_s_and_the_files_own(history: History) -> None:
    """Every Iceberg id, nested ones included, is the Delta column mapping id of the same field, and
    the newest data files carry exactly those ids in their footers."""
    delta_schema = json.loads(support.latest(history.root, "metaData")["schemaString"])
    iceberg_ids = _iceberg_ids(static_table(history.root).schema().fields)
    assert iceberg_ids == _delta_ids(delta_schema)
    # 10 columns, s.a, s.b, s.b.c, s.z (added by mergeSchema), arr.element, arr.element.x, m.key,
    # m.value, m.value.element
    assert len(iceberg_ids) == 19 and "s.z" in iceberg_ids and "m.value.element" in iceberg_ids
    expected_physical = support.expected_field_ids(delta_schema)
    assert set(expected_physical.values()) == set(iceberg_ids.values())
    newest = [a["add"] for a in support.commits(history.root)[-1] if "add" in a]
    assert newest
    for add in newest:
        in_file = support.parquet_field_ids(support.data_file(history.root, add))
        data_ids = {p: i for p, i in in_file.items() if p in expected_physical}
        assert data_ids == expected_physical, add["path"]


def test_a_partition_filter_plans_fewer_files(spark: SparkSession, history: History) -> None:
    table = static_table(history.root)
    all_files = list(table.scan().plan_files())
    even_files = list(table.scan(row_filter=EqualTo("part", "even")).plan_files())
    assert 0 < len(even_files) < len(all_files)
    assert {t.file.partition[0] for t in even_files} == {"even"}
    expected = _spark_arrow(_delta(spark, history.root).where("part = 'even'"))
    assert_same_arrow(table.scan(row_filter=EqualTo("part", "even")).to_arrow(), expected)
    spec = table.spec()
    assert [(f.source_id, str(f.transform)) for f in spec.fields] == [
        (table.schema().find_field("part").field_id, "identity")
    ]


def test_timestamp_filters_keep_every_matching_row(spark: SparkSession, history: History) -> None:
    """Delta keeps timestamp statistics in milliseconds, the values have microseconds: the bounds must
    still admit the row whose value is the filter's own (it is alone in its file, so a bound cut to
    the millisecond would prune the file)."""
    table = static_table(history.root)
    latest = _spark_arrow(_delta(spark, history.root)).to_pylist()
    cut = next(r["ts"] for r in latest if r["id"] == 31)
    assert cut.microsecond % 1000 and cut.tzinfo is not None
    want = sorted(r["id"] for r in latest if r["ts"] is not None and r["ts"] >= cut)
    assert want == [31, 32]
    got = table.scan(row_filter=GreaterThanOrEqual("ts", cut.isoformat())).to_arrow()
    assert sorted(got.column("id").to_pylist()) == want
    ntz_cut = dt.datetime(2024, 6, 1) + dt.timedelta(minutes=32, microseconds=7)
    got = table.scan(row_filter=GreaterThanOrEqual("tsn", ntz_cut.isoformat())).to_arrow()
    assert got.column("id").to_pylist() == [32]


def test_row_lineage_is_delta_row_tracking(history: History) -> None:
    """V3 profiles: every live file's first_row_id is its baseRowId and next-row-id is Delta's high-water
    mark + 1; writer-v1 (IcebergCompatV2, no row tracking) is format v2 without row lineage."""
    meta = metadata_json(history.root)
    if history.profile == "writer-v1":
        assert "next-row-id" not in meta and all("first-row-id" not in s for s in meta["snapshots"])
        return
    snaps = meta["snapshots"]
    for prev, nxt in itertools.pairwise(snaps):
        assert nxt["first-row-id"] == prev["first-row-id"] + prev["added-rows"]
    adds = support.live_adds(history.root)
    base = {f"file://{history.root}/{a['path']}": a["baseRowId"] for a in adds}
    assert {f["path"]: f["first_row_id"] for f in live_files_with_lineage(history.root)} == base
    domain = [a["domainMetadata"] for c in support.commits(history.root) for a in c if "domainMetadata" in a]
    high_water = json.loads([d for d in domain if d["domain"] == "delta.rowTracking"][-1]["configuration"])
    assert meta["next-row-id"] == high_water["rowIdHighWaterMark"] + 1


# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_a_declared_profile_broken_by_plain_delta_spark_is_refused(
    spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    """compat_write, converted; then plain delta-spark appends with a new SMALLINT column (mergeSchema),
    which the writer profiles forbid and whose physical name is not ``col-<id>``. The emitter refuses
    with the catalog's rule ids, the very ones ``icecompat check`` reports, incremental run or first."""
    root = tmp_path / "broken"
    compat_write(_frame(spark, range(0, 2)), str(root), profile=profile)
    write_iceberg_metadata(root)
    before = sorted(p.name for p in (root / "metadata").iterdir())

    plain = _frame(spark, range(2, 3)).withColumn("small", F.lit(1).cast("smallint"))
    with support.unguarded(spark):
        plain.write.format("delta").mode("append").option("mergeSchema", "true").save(str(root))

    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["IWC1-NO-BYTE-SHORT", "IWC1-PHYSICAL-NAME"]
    assert {v.profile for v in err.value.violations} == {profile}
    assert {v.path for v in err.value.violations} == {"small"}
    assert f"declared profile {profile}" in str(err.value)
    assert err.value.rules == sorted(check_table(root).by_rule())
    assert sorted(p.name for p in (root / "metadata").iterdir()) == before  # nothing written

    shutil.rmtree(root / "metadata")  # a first conversion is refused the same way
    with pytest.raises(CompatViolation) as again:
        write_iceberg_metadata(root)
    assert again.value.rules == err.value.rules
    assert not (root / "metadata").exists()


@pytest.mark.parametrize("profile", PROFILES)
def test_a_file_without_num_records_from_another_writer_is_refused(
    spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    """A compat_write table to which a writer that keeps no statistics committed a data file (the log
    entry written here by hand: delta-spark itself refuses such an append, see below). The file is
    readable, the emitter could even count its rows from the footer, but the table breaks its declared
    profile, so it is refused with the catalog's rule, named as ``icecompat check`` names it."""
    root = tmp_path / "nostats"
    compat_write(_frame(spark, range(0, 2)), str(root), profile=profile)
    source = next(a["add"] for a in support.commits(root)[0] if "add" in a)
    copy = root / "from-another-writer.parquet"
    shutil.copyfile(support.data_file(root, source), copy)
    commit = [
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "WRITE"}},
        {
            "add": {
                "path": copy.name,
                "partitionValues": {},
                "size": copy.stat().st_size,
                "modificationTime": 1_700_000_000_000,
                "dataChange": True,
            }
        },
    ]
    if profile != "writer-v1":  # row tracking is on: the other writer still gave the file its row ids
        commit[1]["add"].update(baseRowId=1000, defaultRowCommitVersion=1)
    (root / "_delta_log" / f"{1:020d}.json").write_text("\n".join(json.dumps(a) for a in commit) + "\n")

    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    rule = "ICV2-NUM-RECORDS" if profile == "writer-v1" else "ICV3-NUM-RECORDS"
    assert err.value.rules == [rule]
    assert copy.name in err.value.violations[0].message
    assert err.value.rules == sorted(check_table(root).by_rule())
    assert not (root / "metadata").exists()


STATS_COLLECT = "spark.databricks.delta.stats.collect"


@pytest.fixture
def restore_stats_conf(spark: SparkSession) -> Iterator[None]:
    """Put the session's statistics setting back however the test ends (the session is shared)."""
    before = spark.conf.get(STATS_COLLECT, None)
    yield
    if before is None:
        spark.conf.unset(STATS_COLLECT)
    else:
        spark.conf.set(STATS_COLLECT, before)


def test_delta_spark_itself_refuses_files_without_num_records(
    spark: SparkSession, tmp_path: Path, restore_stats_conf: None
) -> None:
    """Why the refusal test above breaks the profile through the schema: a plain append without
    statistics never lands on an IcebergCompat table, delta-spark refuses it (IcebergCompatV2 and V3
    both require numRecords). The emitter's catalog check of numRecords is exercised on a hand-written
    log in test_synthetic.py instead."""
    root = tmp_path / "nostats"
    compat_write(_frame(spark, range(0, 2)), str(root), profile="writer-v1")
    spark.conf.set(STATS_COLLECT, "false")
    with pytest.raises(Exception, match="numRecords"):
        _frame(spark, range(2, 3)).write.format("delta").mode("append").save(str(root))
    assert len(support.commits(root)) == 1  # nothing landed


def test_icecompat_iceberg_command(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``icecompat iceberg`` subcommand, in process: 0 written or current, 1 refused, 2 unreadable."""
    root = tmp_path / "cli"
    compat_write(_frame(spark, range(0, 4)), str(root), partition_by="part", profile="writer-v1")
    assert icecompat_main(["iceberg", str(root)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "Iceberg format v2" in out and "Delta v0" in out
    assert static_table(root).scan().to_arrow().num_rows == 4

    assert icecompat_main(["iceberg", str(root)]) == 0
    assert "already at Delta version 0" in capsys.readouterr().out

    assert icecompat_main(["iceberg", str(root), "--format-version", "3"]) == 1
    assert "ICEBERG-EMIT-FORMAT-VERSION" in capsys.readouterr().err

    support.unguarded_sql(spark, f"ALTER TABLE delta.`{root}` ADD COLUMNS (b TINYINT)")  # breaks writer-v1
    assert icecompat_main(["iceberg", str(root)]) == 1
    err = capsys.readouterr().err
    assert "IWC1-NO-BYTE-SHORT" in err and "declared profile writer-v1" in err

    assert icecompat_main(["iceberg", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.startswith("icecompat iceberg: ")
    assert icecompat_main(["iceberg", str(root), "--format-version", "4"]) == 2
