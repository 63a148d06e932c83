"""compat_write on real Spark + Delta: every mode, both target kinds, every profile.

Each guarantee is asserted from the table's own files: the `_delta_log` JSON and the Parquet footers
read with pyarrow (tests/support.py, which does not use the package's reader or rules), and the data
is read back through delta-spark and compared with chispa.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icecompat_writer.errors import IcecompatError, TableExistsError
from icecompat_writer.writing.api import compat_write
from icecompat_writer.writing.wrappers import compat
from tests import support

PROFILES = ["v3", "writer-v1", "writer-v3"]

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
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


def rows(start: int, n: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(start, start + n):
        out.append(
            (
                i,
                f"n{i}",
                "even" if i % 2 == 0 else "odd",
                dt.datetime(2024, 1, 1, 12, 0, 0) + dt.timedelta(seconds=i, microseconds=123),
                dt.datetime(2024, 6, 1) + dt.timedelta(minutes=i),
                decimal.Decimal(f"{i}.25"),
                (i, (f"c{i}",)),
                [(i,), (i + 1,)],
                {f"k{i}": [i, i * 2]},
            )
        )
    return out


def frame(spark: SparkSession, start: int, n: int) -> DataFrame:
    return spark.createDataFrame(rows(start, n), SCHEMA)


def comparable(df: DataFrame) -> DataFrame:
    """Map columns cannot be sorted; compare them as JSON text."""
    cols = [F.to_json(F.col(f"`{c}`")).alias(c) if c == "m" else F.col(f"`{c}`") for c in df.columns]
    return df.select(*cols)


def assert_reads_equal(spark: SparkSession, root: Path, expected: DataFrame) -> None:
    got = spark.read.format("delta").load(str(root)).select(*[f"`{c}`" for c in expected.columns])
    assert_df_equality(comparable(got), comparable(expected), ignore_row_order=True, ignore_nullable=True)


def assert_guarantees(root: Path, profile: str) -> None:
    """Everything a compat commit promises, checked on the real files."""
    protocol = support.latest(root, "protocol")
    metadata = support.latest(root, "metaData")
    conf = metadata["configuration"]
    schema = json.loads(metadata["schemaString"])
    writer = set(protocol.get("writerFeatures") or [])

    assert protocol["minWriterVersion"] == 7
    assert protocol["minReaderVersion"] == 2 or "columnMapping" in (protocol.get("readerFeatures") or [])
    assert "columnMapping" in writer
    if profile in {"v3", "writer-v3"}:
        assert {"icebergCompatV3", "rowTracking", "domainMetadata"} <= writer
        assert conf["delta.enableIcebergCompatV3"] == "true"
        assert conf["delta.enableRowTracking"] == "true"
        assert conf.get("delta.enableIcebergCompatV2", "false") == "false"
    if profile == "writer-v1":
        assert {"icebergCompatV2", "icebergWriterCompatV1"} <= writer
        assert conf["delta.enableIcebergCompatV2"] == "true"
        assert conf["delta.enableIcebergWriterCompatV1"] == "true"
        assert conf.get("delta.enableRowTracking", "false") == "false"
    if profile == "writer-v3":
        assert "icebergWriterCompatV3" in writer
        assert conf["delta.enableIcebergWriterCompatV3"] == "true"
    if profile.startswith("writer-"):
        assert conf["delta.columnMapping.mode"] == "id"
    else:
        assert conf["delta.columnMapping.mode"] in {"id", "name"}

    expected_ids = support.expected_field_ids(schema)
    assert len(set(expected_ids.values())) == len(expected_ids), "column ids must be unique"
    assert max(expected_ids.values()) <= int(conf["delta.columnMapping.maxColumnId"]) < 2**31
    top = {f["metadata"]["delta.columnMapping.physicalName"] for f in schema["fields"]}
    if profile.startswith("writer-"):
        for path, fid in expected_ids.items():
            last = path.rsplit(".", 1)[-1]
            if last not in {"element", "key", "value"}:
                assert last == f"col-{fid}", f"{path}: physical name must be col-<id>"

    partition_physical = {
        f["metadata"]["delta.columnMapping.physicalName"]
        for f in schema["fields"]
        if f["name"] in metadata["partitionColumns"]
    }
    adds = support.live_adds(root)
    assert adds, "a compat table with data has live files"
    newest = {a["add"]["path"] for a in support.commits(root)[-1] if "add" in a}
    for add in adds:
        path = support.data_file(root, add)
        stats = json.loads(add["stats"])
        assert stats["numRecords"] == support.parquet_rows(path), f"numRecords of {add['path']}"
        ids = support.parquet_field_ids(path)
        for p, fid in expected_ids.items():
            if p.split(".", 1)[0] in top and p in ids:
                assert ids[p] == fid, f"{add['path']}: field id of {p}"
        assert set(ids) <= set(expected_ids), f"{add['path']} has columns the schema does not know"
        if add["path"] in newest:  # older files may predate columns added later
            missing = {p for p in expected_ids if p not in ids}
            assert not missing, f"{add['path']} lacks columns {missing}"
        assert partition_physical <= {p for p in ids if "." not in p}, "partition values must be in the file"
        assert "INT96" not in support.physical_types(path).values(), "timestamps must be INT64"


def make_target(kind: str, tmp_path: Path, name: str) -> tuple[str, Path]:
    if kind == "path":
        root = tmp_path / name
        return str(root), root
    ident = f"t_{re.sub(r'[^a-z0-9]', '_', name.lower())}"
    return ident, Path()


def root_of(spark: SparkSession, target: str, root: Path) -> Path:
    if root != Path():
        return root
    name = target if target.startswith("`") else f"`{target}`"
    loc = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
    return Path(loc.removeprefix("file:"))


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("kind", ["path", "table"])
def test_every_mode_keeps_the_table_compliant(
    spark: SparkSession, tmp_path: Path, profile: str, kind: str
) -> None:
    target, root = make_target(kind, tmp_path, f"modes-{profile}-{kind}")
    a = frame(spark, 0, 6)

    first = compat_write(a, target, partition_by=["part"], profile=profile)
    root = root_of(spark, target, root)
    assert first.version == 0 and first.rows == 6 and first.files
    assert_guarantees(root, profile)
    assert_reads_equal(spark, root, a)

    before = support.tree_digest(root)
    with pytest.raises(TableExistsError):
        compat_write(a, target, profile=profile)
    skipped = compat_write(a, target, mode="ignore", profile=profile)
    assert skipped.version is None and skipped.skipped
    assert support.tree_digest(root) == before, "errorifexists/ignore must leave the table untouched"

    b = frame(spark, 6, 4)
    appended = compat_write(b, target, mode="append", profile=profile)
    assert appended.version == 1 and appended.rows == 4
    assert_guarantees(root, profile)
    assert_reads_equal(spark, root, a.unionByName(b))

    c = frame(spark, 100, 3)
    overwritten = compat_write(c, target, mode="overwrite", profile=profile)
    assert overwritten.version == 2 and overwritten.removed_files == len(first.files) + len(appended.files)
    assert_guarantees(root, profile)
    assert_reads_equal(spark, root, c)
    assert support.latest(root, "metaData")["partitionColumns"] == ["part"]


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_schema_evolution_continues_ids_and_names(spark: SparkSession, tmp_path: Path, profile: str) -> None:
    root = tmp_path / "evolve"
    compat_write(frame(spark, 0, 3), str(root), partition_by="part", profile=profile)
    schema0 = json.loads(support.latest(root, "metaData")["schemaString"])
    ids0 = support.expected_field_ids(schema0)
    max0 = int(support.latest(root, "metaData")["configuration"]["delta.columnMapping.maxColumnId"])

    more = (
        frame(spark, 3, 2)
        .withColumn("extra", F.array(F.lit("e")))
        .withColumn("s", F.struct(F.col("s.a").alias("a"), F.col("s.b").alias("b"), F.lit(1.5).alias("z")))
    )
    result = compat_write(more, str(root), mode="append", profile=profile, options={"mergeSchema": "true"})
    assert result.version == 1
    schema1 = json.loads(support.latest(root, "metaData")["schemaString"])
    ids1 = support.expected_field_ids(schema1)
    for path, fid in ids0.items():
        assert ids1[path] == fid, f"existing {path} must keep its id"
    new_ids = sorted(set(ids1.values()) - set(ids0.values()))
    assert new_ids and min(new_ids) == max0 + 1, "new columns continue from maxColumnId"
    extra = next(f for f in schema1["fields"] if f["name"] == "extra")
    assert (
        extra["metadata"]["delta.columnMapping.physicalName"]
        == f"col-{extra['metadata']['delta.columnMapping.id']}"
    )
    assert_guarantees(root, profile)
    back = spark.read.format("delta").load(str(root))
    assert back.filter("extra is not null").count() == 2
    assert back.filter("s.z = 1.5").count() == 2


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_overwrite_schema_replaces_columns_and_partitioning(
    spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    root = tmp_path / "reshape"
    compat_write(frame(spark, 0, 4), str(root), partition_by="part", profile=profile)
    new = frame(spark, 10, 3).drop("m").withColumnRenamed("name with space", "label")
    result = compat_write(
        new,
        str(root),
        mode="overwrite",
        partition_by=["part"],
        profile=profile,
        options={"overwriteSchema": "true"},
    )
    assert result.version == 1
    md = support.latest(root, "metaData")
    names = [f["name"] for f in json.loads(md["schemaString"])["fields"]]
    assert "m" not in names and "label" in names
    assert_guarantees(root, profile)
    assert_reads_equal(spark, root, new)


@pytest.mark.spark
def test_v1_and_v2_writer_wrappers(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "wrapped"
    df = frame(spark, 0, 4)
    res = compat(df).write.format("delta").mode("overwrite").partitionBy("part").save(str(root))
    assert res.version == 0
    compat(frame(spark, 4, 2)).write.mode("append").save(str(root))
    assert_reads_equal(spark, root, frame(spark, 0, 6))
    assert_guarantees(root, "v3")

    compat(df, profile="writer-v1").writeTo("wrapped_v2").partitionedBy("part").create()
    compat(frame(spark, 4, 2), profile="writer-v1").writeTo("wrapped_v2").append()
    assert spark.table("wrapped_v2").count() == 6
    compat(frame(spark, 50, 1), profile="writer-v1").writeTo("wrapped_v2").partitionedBy(
        "part"
    ).createOrReplace()
    assert [r.id for r in spark.table("wrapped_v2").collect()] == [50]
    assert_guarantees(root_of(spark, "wrapped_v2", Path()), "writer-v1")


@pytest.mark.spark
def test_idempotent_writes_with_txn_ids(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "idem"
    opts = {"txnAppId": "job-1", "txnVersion": "7"}
    first = compat_write(frame(spark, 0, 3), str(root), mode="append", options=opts)
    again = compat_write(frame(spark, 0, 3), str(root), mode="append", options=opts)
    assert first.version == 0 and again.version is None and "already committed" in (again.skipped or "")
    assert spark.read.format("delta").load(str(root)).count() == 3
    txns = [a["txn"] for c in support.commits(root) for a in c if "txn" in a]
    assert txns == [{"appId": "job-1", "version": 7, "lastUpdated": txns[0]["lastUpdated"]}]


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_replace_where_and_dynamic_partition_overwrite(
    spark: SparkSession, tmp_path: Path, profile: str
) -> None:
    root = tmp_path / "partial"
    compat_write(frame(spark, 0, 6), str(root), partition_by="part", profile=profile)  # ids 0..5
    evens = frame(spark, 100, 4).filter("part = 'even'")  # ids 100, 102
    compat_write(
        evens, str(root), mode="overwrite", profile=profile, options={"replaceWhere": "part = 'even'"}
    )
    got = sorted(r.id for r in spark.read.format("delta").load(str(root)).select("id").collect())
    assert got == [1, 3, 5, 100, 102]
    assert_guarantees(root, profile)

    odds = frame(spark, 200, 2).filter("part = 'odd'")  # id 201
    compat_write(
        odds, str(root), mode="overwrite", profile=profile, options={"partitionOverwriteMode": "dynamic"}
    )
    got = sorted(r.id for r in spark.read.format("delta").load(str(root)).select("id").collect())
    assert got == [100, 102, 201]
    assert_guarantees(root, profile)


@pytest.mark.spark
def test_save_as_table_and_insert_into(spark: SparkSession) -> None:
    name = "orders_2026"
    df = frame(spark, 0, 3)
    first = compat(df, profile="writer-v3").write.partitionBy("part").saveAsTable(name)
    assert first.version == 0
    # insertInto matches by position: rename every column, keep the order
    renamed = frame(spark, 3, 2).toDF(*[f"c{i}" for i in range(len(SCHEMA.fields))])
    second = compat(renamed, profile="writer-v3").write.insertInto(name)
    assert second.version == 1
    back = spark.table(name)
    assert back.count() == 5 and back.columns == [f.name for f in SCHEMA.fields]
    assert_guarantees(root_of(spark, name, Path()), "writer-v3")


@pytest.mark.spark
def test_a_name_the_catalog_cannot_hold_is_refused_before_writing(spark: SparkSession) -> None:
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    before = sorted(p.name for p in warehouse.iterdir()) if warehouse.exists() else []
    with pytest.raises(IcecompatError, match="letters, digits and _"):
        compat_write(frame(spark, 0, 1), "`odd näme; DROP TABLE x`")
    after = sorted(p.name for p in warehouse.iterdir()) if warehouse.exists() else []
    assert after == before


@pytest.mark.spark
def test_row_tracking_columns_materialized_by_delta_carry_the_reserved_ids(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "rt"
    for start in (0, 10, 20):
        compat_write(spark.range(start, start + 5), str(root), mode="append", profile="v3")
    spark.sql(f"UPDATE delta.`{root}` SET id = id + 1000 WHERE id < 3")
    spark.sql(f"OPTIMIZE delta.`{root}`")
    conf = support.latest(root, "metaData")["configuration"]
    row_id = conf["delta.rowTracking.materializedRowIdColumnName"]
    row_version = conf["delta.rowTracking.materializedRowCommitVersionColumnName"]
    materialized = 0
    for add in support.live_adds(root):
        ids = support.parquet_field_ids(support.data_file(root, add))
        if row_id in ids:
            materialized += 1
            assert ids[row_id] == 2147483540
            assert ids[row_version] == 2147483539
    assert materialized >= 1, "OPTIMIZE materializes the row-tracking columns"
