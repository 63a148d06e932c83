"""Delta writes that bypass compat_write (SQL, DataFrameWriter V1/V2) in a guarded session.

Each case runs real Spark SQL / DataFrame writes with the guard switched on for the session
(``spark.icecompat.guard.enabled`` / ``spark.icecompat.profile`` are runtime settings), then asserts
what landed from the log's JSON and the Parquet footers (tests/support.py), or that the refusal
names the rule and left every byte of the table as it was.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.jvm.bridge import translate_exception
from tests.support import (
    commits,
    data_file,
    expected_field_ids,
    latest,
    live_adds,
    parquet_field_ids,
    tree_digest,
)

DECLARING = {
    "v3": "delta.enableIcebergCompatV3",
    "writer-v1": "delta.enableIcebergWriterCompatV1",
    "writer-v3": "delta.enableIcebergWriterCompatV3",
}
PROFILES = list(DECLARING)
_names = itertools.count()


def refusal(fn: Any) -> CompatViolation:
    """Run a Spark write that the guard must refuse; its CompatViolation (the exact type)."""
    with pytest.raises(Exception) as info:
        fn()
    err = translate_exception(info.value)
    assert type(err) is CompatViolation, f"{type(info.value).__name__}: {info.value}"
    return err


def assert_compliant(root: Path, profile: str) -> None:
    """The table declares ``profile``, every field is named and numbered as the profile wants in
    every live file, and the checker finds nothing."""
    meta = latest(root, "metaData")
    assert meta["configuration"][DECLARING[profile]] == "true"
    schema = json.loads(meta["schemaString"])
    expected = expected_field_ids(schema)
    if profile.startswith("writer"):
        for path, fid in expected.items():
            leaf = path.rsplit(".", 1)[-1]
            if leaf not in ("element", "key", "value"):
                assert leaf == f"col-{fid}", path
    adds = live_adds(root)
    assert adds
    partitions = set(meta["partitionColumns"])
    newest = {a["add"]["path"] for a in commits(root)[-1] if "add" in a}
    for add in adds:
        ids = {k: v for k, v in parquet_field_ids(data_file(root, add)).items() if not k.startswith("_row")}
        # every column a file has carries the table's id; files of the last commit have them all
        assert {path: expected.get(path) for path in ids} == ids, add["path"]
        if add["path"] in newest:
            assert set(ids) == set(expected), add["path"]
        assert '"numRecords"' in add["stats"]
    if partitions:
        assert all(add["partitionValues"] for add in adds)
    report = check_table(root, profile, files="all")
    assert not report.violations and not report.findings, report.render_text()


def sql_path(root: Path) -> str:
    return f"delta.`{root}`"


@pytest.mark.parametrize("profile", PROFILES)
def test_ctas_declaring_a_profile_lands_compliant(guarded: Any, tmp_path: Path, profile: str) -> None:
    root = tmp_path / "t"
    guarded.sql(
        f"CREATE TABLE {sql_path(root)} USING delta PARTITIONED BY (p) "
        f"TBLPROPERTIES ('{DECLARING[profile]}' = 'true') AS "
        "SELECT id, CAST(id % 2 AS STRING) AS p, named_struct('a', id, 'b', array(id, id + 1)) AS s, "
        "map('k', named_struct('x', id)) AS m, TIMESTAMP '2024-01-01 10:00:00' AS ts FROM range(6)"
    )
    assert_compliant(root, profile)
    back = guarded.read.format("delta").load(str(root)).select("id", "p", "s.a")
    want = guarded.range(6).selectExpr("id", "CAST(id % 2 AS STRING) AS p", "id AS a")
    assert_df_equality(back, want, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("profile", PROFILES)
def test_session_profile_makes_plain_dataframe_writes_compliant(
    guarded: Any, tmp_path: Path, profile: str
) -> None:
    guarded.conf.set("spark.icecompat.profile", profile)
    root = tmp_path / "t"
    df = guarded.range(8).selectExpr("id", "CAST(id % 3 AS STRING) AS p", "named_struct('x', id) AS s")
    df.write.format("delta").partitionBy("p").save(str(root))
    assert_compliant(root, profile)
    # mergeSchema: the new column is planned like the others
    df.selectExpr("*", "array(id) AS extra").write.format("delta").mode("append").option(
        "mergeSchema", "true"
    ).save(str(root))
    assert_compliant(root, profile)
    assert guarded.read.format("delta").load(str(root)).count() == 16


def test_insert_into_keeps_the_table_compliant(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    guarded.sql(
        f"CREATE TABLE {sql_path(root)} (id BIGINT, p STRING, s STRUCT<a: INT>) USING delta "
        "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true')"
    )
    guarded.sql(f"INSERT INTO {sql_path(root)} VALUES (1, 'a', named_struct('a', 1)), (2, 'b', NULL)")
    assert_compliant(root, "writer-v1")
    assert guarded.read.format("delta").load(str(root)).count() == 2


def test_alter_add_columns_names_new_columns_by_id(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    guarded.sql(
        f"CREATE TABLE {sql_path(root)} USING delta "
        "TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true') "
        "AS SELECT 1 AS id, named_struct('a', 1) AS s"
    )
    guarded.sql(f"ALTER TABLE {sql_path(root)} ADD COLUMNS (extra STRING, deep STRUCT<q: ARRAY<INT>>)")
    fields = {f["name"]: f for f in json.loads(latest(root, "metaData")["schemaString"])["fields"]}
    for name in ("extra", "deep"):
        meta = fields[name]["metadata"]
        assert meta["delta.columnMapping.physicalName"] == f"col-{meta['delta.columnMapping.id']}"
    guarded.sql(
        f"INSERT INTO {sql_path(root)} VALUES (2, named_struct('a', 2), 'x', named_struct('q', array(1)))"
    )
    assert_compliant(root, "writer-v1")


def test_alter_add_columns_with_a_forbidden_type_is_refused(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    guarded.sql(
        f"CREATE TABLE {sql_path(root)} USING delta "
        "TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true') "
        "AS SELECT 1 AS id"
    )
    before = tree_digest(root)
    err = refusal(lambda: guarded.sql(f"ALTER TABLE {sql_path(root)} ADD COLUMNS (s STRUCT<tiny: TINYINT>)"))
    assert [(v.rule, v.path, v.profile) for v in err.violations] == [
        ("IWC1-NO-BYTE-SHORT", "s.tiny", "writer-v1")
    ]
    assert "cast the column to integer" in str(err)
    assert tree_digest(root) == before


def test_ctas_refused_before_any_file_is_written(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    err = refusal(
        lambda: guarded.sql(
            f"CREATE TABLE {sql_path(root)} USING delta "
            "TBLPROPERTIES ('delta.enableIcebergWriterCompatV3' = 'true') "
            "AS SELECT CAST(1 AS SMALLINT) AS small, map(CAST(1 AS TINYINT), 1) AS m"
        )
    )
    assert {(v.rule, v.path) for v in err.violations} == {
        ("IWC1-NO-BYTE-SHORT", "small"),
        ("IWC1-NO-BYTE-SHORT", "m.key"),
    }
    assert tree_digest(root) == {}


def _rtas_table(spark: Any, root: Path) -> None:
    spark.sql(
        f"CREATE TABLE {sql_path(root)} USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true') AS "
        "SELECT CAST(id AS INT) AS id, CAST(id % 2 AS STRING) AS p FROM range(4)"
    )


def test_rtas_renaming_the_partition_column_is_refused(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    _rtas_table(guarded, root)
    before = tree_digest(root)
    err = refusal(
        lambda: guarded.sql(
            f"REPLACE TABLE {sql_path(root)} USING delta PARTITIONED BY (q) "
            "TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true') AS SELECT 1 AS id, 'a' AS q"
        )
    )
    assert [(v.rule, v.observed, v.expected) for v in err.violations] == [
        ("ICV3-NO-PARTITION-RENAME", "q", "p")
    ]
    assert tree_digest(root) == before


def test_rtas_changing_only_a_type_is_allowed_and_keeps_ids(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    _rtas_table(guarded, root)
    ids_before = {
        f["name"]: f["metadata"]["delta.columnMapping.id"]
        for f in json.loads(latest(root, "metaData")["schemaString"])["fields"]
    }
    guarded.sql(
        f"REPLACE TABLE {sql_path(root)} USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true') AS "
        "SELECT id, CAST(id % 2 AS STRING) AS p FROM range(3)"
    )
    fields = json.loads(latest(root, "metaData")["schemaString"])["fields"]
    assert {f["name"]: f["type"] for f in fields} == {"id": "long", "p": "string"}
    assert {f["name"]: f["metadata"]["delta.columnMapping.id"] for f in fields} == ids_before
    assert_compliant(root, "v3")
    assert guarded.read.format("delta").load(str(root)).count() == 3


@pytest.mark.parametrize("profile", PROFILES)
def test_dataframe_writer_v2_create_and_append(guarded: Any, profile: str) -> None:
    name = f"guard_v2_{re.sub('[^a-z0-9]', '_', profile)}_{next(_names)}"
    df = guarded.range(4).selectExpr(
        "id", "CAST(id % 2 AS STRING) AS p", "array(named_struct('x', id)) AS arr"
    )
    try:
        df.writeTo(name).using("delta").tableProperty(DECLARING[profile], "true").partitionedBy(df.p).create()
        df.writeTo(name).append()
        location = guarded.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
        root = Path(location.removeprefix("file:"))
        assert_compliant(root, profile)
        assert guarded.table(name).count() == 8
    finally:
        guarded.sql(f"DROP TABLE IF EXISTS {name}")


def test_commit_check_refuses_appends_to_a_table_below_the_session_profile(
    guarded: Any, spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    guarded.conf.unset("spark.icecompat.guard.enabled")  # an ordinary table, written unguarded
    spark.range(3).write.format("delta").save(str(root))
    guarded.conf.set("spark.icecompat.profile", "v3")
    before = tree_digest(root)
    # An append changes no metadata: only the commit check sees it, after the files were written.
    err = refusal(lambda: guarded.range(3, 6).write.format("delta").mode("append").save(str(root)))
    assert {"ICV3-ENABLED", "ICV3-COLUMN-MAPPING-MODE", "ICV3-ROW-TRACKING"} <= set(err.rules)
    assert tree_digest(root) == before  # the refused commit's data files were deleted


def test_compat_write_in_a_guarded_session_is_checked_once(guarded: Any, tmp_path: Path) -> None:
    from icecompat_writer import compat_write

    root = tmp_path / "t"
    result = compat_write(
        guarded.range(3).selectExpr("id", "named_struct('a', id) AS s"), str(root), profile="writer-v1"
    )
    assert result.version == 0
    assert_compliant(root, "writer-v1")


def test_unguarded_session_leaves_delta_alone(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    spark.sql(
        f"CREATE TABLE {sql_path(root)} USING delta TBLPROPERTIES ('delta.columnMapping.mode' = 'name') "
        "AS SELECT 1 AS id"
    )
    phys = json.loads(latest(root, "metaData")["schemaString"])["fields"][0]["metadata"]
    assert re.fullmatch(r"col-[0-9a-f-]{36}", phys["delta.columnMapping.physicalName"])
