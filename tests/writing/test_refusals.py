"""Every refusal names its rule and column, and leaves the table byte-for-byte as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.errors import CompatViolation, IcecompatError
from icecompat_writer.writing.api import compat_write
from tests import support


def pairs(err: pytest.ExceptionInfo[CompatViolation]) -> set[tuple[str, str]]:
    return {(v.rule, v.path) for v in err.value.violations}


@pytest.fixture
def spark_conf(spark: SparkSession) -> Iterator[dict[str, str | None]]:
    """Session settings a test changes, restored afterwards."""
    changed: dict[str, str | None] = {}

    class Setter(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: str, value: str) -> None:
            changed.setdefault(key, spark.conf.get(key, None))
            spark.conf.set(key, value)

    yield Setter()
    for key, old in changed.items():
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


@pytest.mark.spark
def test_type_outside_the_v3_allow_list_creates_nothing(spark: SparkSession, table_path: Path) -> None:
    df = spark.range(3).withColumn("nothing", F.lit(None))
    with pytest.raises(CompatViolation) as err:
        compat_write(df, str(table_path), profile="v3")
    assert ("ICV3-TYPE-ALLOWLIST", "nothing") in pairs(err)
    assert err.value.violations[0].fix
    assert not table_path.exists(), "a refused create must not leave a table or any file behind"


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_byte_and_short_are_refused_by_writer_profiles_with_nested_paths(
    spark: SparkSession, table_path: Path, profile: str
) -> None:
    df = spark.sql(
        "select id, named_struct('b', cast(id as tinyint)) as s, "
        "array(named_struct('h', cast(id as smallint))) as arr from range(2)"
    )
    with pytest.raises(CompatViolation) as err:
        compat_write(df, str(table_path), profile=profile)
    assert {("IWC1-NO-BYTE-SHORT", "s.b"), ("IWC1-NO-BYTE-SHORT", "arr.element.h")} <= pairs(err)
    assert all(v.profile == profile for v in err.value.violations)
    assert not table_path.exists()
    # the same DataFrame is fine for v3, whose allow-list has byte and short
    assert compat_write(df, str(table_path), profile="v3").version == 0


@pytest.mark.spark
def test_merge_schema_with_a_forbidden_type_leaves_the_table_unchanged(
    spark: SparkSession, table_path: Path
) -> None:
    compat_write(spark.range(3), str(table_path), profile="writer-v1")
    before = support.tree_digest(table_path)
    more = spark.range(2).withColumn("tiny", F.col("id").cast("tinyint"))
    with pytest.raises(CompatViolation) as err:
        compat_write(
            more, str(table_path), mode="append", profile="writer-v1", options={"mergeSchema": "true"}
        )
    assert pairs(err) == {("IWC1-NO-BYTE-SHORT", "tiny")}
    assert support.tree_digest(table_path) == before


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_replacing_with_a_renamed_partition_column_is_blocked(
    spark: SparkSession, table_path: Path, profile: str
) -> None:
    base = spark.sql("select id, cast(id % 2 as int) as part_a, cast(id % 3 as int) as part_b from range(6)")
    compat_write(base, str(table_path), partition_by="part_a", profile=profile)
    before = support.tree_digest(table_path)
    rule = "ICV3-NO-PARTITION-RENAME" if profile == "v3" else "ICV2-NO-PARTITION-RENAME"
    with pytest.raises(CompatViolation) as err:
        compat_write(
            base,
            str(table_path),
            mode="overwrite",
            partition_by="part_b",
            profile=profile,
            options={"overwriteSchema": "true"},
        )
    assert rule in err.value.rules
    assert support.tree_digest(table_path) == before

    # a type-only change of the same partition column is allowed
    widened = base.withColumn("part_a", F.col("part_a").cast("long"))
    result = compat_write(
        widened,
        str(table_path),
        mode="overwrite",
        partition_by="part_a",
        profile=profile,
        options={"overwriteSchema": "true"},
    )
    assert result.version == 1
    assert support.latest(table_path, "metaData")["partitionColumns"] == ["part_a"]
    assert spark.read.format("delta").load(str(table_path)).schema["part_a"].dataType.typeName() == "long"


@pytest.mark.spark
def test_writer_profile_refuses_a_table_with_uuid_physical_names(
    spark: SparkSession, table_path: Path
) -> None:
    spark.range(3).write.format("delta").option("delta.columnMapping.mode", "name").save(str(table_path))
    before = support.tree_digest(table_path)
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(3, 5), str(table_path), mode="append", profile="writer-v1")
    found = [v for v in err.value.violations if v.rule == "IWC1-PHYSICAL-NAME"]
    assert [v.path for v in found] == ["id"]
    assert found[0].observed and found[0].observed.startswith("col-") and found[0].expected == "col-1"
    assert support.tree_digest(table_path) == before


@pytest.mark.spark
def test_switching_profiles_on_a_table_is_refused(spark: SparkSession, table_path: Path) -> None:
    compat_write(spark.range(2), str(table_path), profile="v3")
    before = support.tree_digest(table_path)
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(2), str(table_path), mode="append", profile="writer-v1")
    assert "PROFILE-EXCLUSIVE" in err.value.rules
    assert support.tree_digest(table_path) == before


@pytest.mark.spark
def test_delta_write_rules_refuse_before_any_file(spark: SparkSession, table_path: Path) -> None:
    compat_write(spark.range(2), str(table_path))
    before = support.tree_digest(table_path)
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(2).withColumn("new", F.lit(1)), str(table_path), mode="append")
    assert pairs(err) == {("DELTA-WRITE-UNKNOWN-COLUMN", "new")}
    assert "mergeSchema" in err.value.violations[0].fix
    with pytest.raises(CompatViolation) as err2:
        compat_write(spark.range(2).selectExpr("cast(id as string) as id"), str(table_path), mode="append")
    assert pairs(err2) == {("DELTA-WRITE-TYPE-MISMATCH", "id")}
    assert support.tree_digest(table_path) == before


@pytest.mark.spark
def test_files_failing_verification_are_removed_and_nothing_is_committed(
    spark: SparkSession, table_path: Path, spark_conf: dict[str, str]
) -> None:
    """Without stats the plan looks fine; only the written files show the problem."""
    compat_write(spark.range(4), str(table_path))
    before = support.tree_digest(table_path)
    spark_conf["spark.databricks.delta.stats.collect"] = "false"
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(4, 8), str(table_path), mode="append")
    assert "ICV3-NUM-RECORDS" in err.value.rules
    assert support.tree_digest(table_path) == before, "the new data files must be removed, the log untouched"


def test_txn_ids_go_together(spark: SparkSession, table_path: Path) -> None:
    with pytest.raises(IcecompatError, match="txnAppId and txnVersion"):
        compat_write(spark.range(1), str(table_path), options={"txnAppId": "a"})
    assert not table_path.exists()


@pytest.mark.spark
def test_java_failures_arrive_as_package_errors(spark: SparkSession, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(IcecompatError) as err:
        compat_write(spark.range(1), str(blocker / "table"))
    assert "Py4J" not in type(err.value).__name__
    assert blocker.read_text() == "not a directory"
