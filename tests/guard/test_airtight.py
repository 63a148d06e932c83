"""The guard holds every table that declares a profile, in every session that has the package's jars.

Each case attacks one way a commit could land that the checker fails (defaults, table properties,
multi-commit commands, clones, leftovers, exception types, Delta's own write rules) and asserts three
independent things: every file and directory below the table (hashed), the checker's verdict with
every footer read, and delta-spark reading the table back (with ``_metadata.row_id`` where row
tracking is on).
"""

from __future__ import annotations

import itertools
import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icecompat_writer import compat_write
from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation, SessionConfigError
from icecompat_writer.sessions import GUARD_ENABLED_KEY, configure
from tests.support import commits, latest, live_adds, session_conf, tree_state

DECLARING = {
    "v3": "delta.enableIcebergCompatV3",
    "writer-v1": "delta.enableIcebergWriterCompatV1",
    "writer-v3": "delta.enableIcebergWriterCompatV3",
}
OFF = {GUARD_ENABLED_KEY: "false"}
_names = itertools.count()


def sql_path(root: Path) -> str:
    return f"delta.`{root}`"


def make_table(spark: Any, root: Path, profile: str, partitioned: bool = False) -> None:
    """A compliant table of ``profile`` with two rows, made by compat_write."""
    df = spark.sql("SELECT * FROM VALUES (1, 'a', 'x'), (2, 'b', 'y') AS t(id, s, d)")
    compat_write(df, str(root), profile=profile, partition_by="d" if partitioned else None)


def assert_compliant(root: Path) -> None:
    report = check_table(root, files="all")
    assert report.compliant, report.render_text()


def assert_readable(spark: Any, root: Path, rows: int | None = None) -> None:
    """delta-spark reads every row, with ``_metadata.row_id`` when row tracking is on."""
    df = spark.read.format("delta").load(str(root))
    conf = latest(root, "metaData")["configuration"]
    if conf.get("delta.enableRowTracking") == "true":
        got = df.select("_metadata.row_id").collect()
        assert all(r[0] is not None for r in got)
        assert len({r[0] for r in got}) == len(got)
    count = df.count()
    if rows is not None:
        assert count == rows


def refused(fn: Any, exc: type[BaseException] = CompatViolation) -> BaseException:
    with pytest.raises(exc) as info:
        fn()
    assert type(info.value) is exc, type(info.value)
    return info.value


def assert_untouched(spark: Any, root: Path, before: dict[str, str], rows: int) -> None:
    assert tree_state(root) == before
    assert_compliant(root)
    assert_readable(spark, root, rows)


# 1. The guard is on unless a session opts out, and an opted-out session refuses instead of corrupting


def test_configure_and_session_turn_the_guard_on_unless_opted_out(spark: Any) -> None:
    assert configure(SparkSession.builder)._options[GUARD_ENABLED_KEY] == "true"
    assert configure(SparkSession.builder, guard=False)._options[GUARD_ENABLED_KEY] == "false"
    SparkSession.builder._options.pop(GUARD_ENABLED_KEY, None)
    assert spark.conf.get(GUARD_ENABLED_KEY) == "true"


def test_a_default_session_holds_a_writer_table_made_by_sql(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    spark.sql(
        f"CREATE TABLE {sql_path(root)} USING delta "
        "TBLPROPERTIES ('delta.enableIcebergWriterCompatV1'='true') "
        "AS SELECT 1 AS id, TIMESTAMP'2024-01-01 00:00:00' AS ts, named_struct('a', 1) AS s"
    )
    spark.sql(f"ALTER TABLE {sql_path(root)} ADD COLUMNS (extra string)")
    spark.sql(
        f"INSERT INTO {sql_path(root)} VALUES (2, TIMESTAMP'2024-01-02 00:00:00', named_struct('a', 2), 'e')"
    )
    names = [
        f["metadata"]["delta.columnMapping.physicalName"]
        for f in json.loads(latest(root, "metaData")["schemaString"])["fields"]
    ]
    assert all(n.startswith("col-") and len(n) < 12 for n in names), names
    assert_compliant(root)
    assert_readable(spark, root, 2)


@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_an_opted_out_session_refuses_writes_to_writer_tables(
    spark: Any, tmp_path: Path, profile: str
) -> None:
    root = tmp_path / "t"
    make_table(spark, root, profile)
    before = tree_state(root)
    with session_conf(spark, OFF):
        for statement in (
            f"INSERT INTO {sql_path(root)} VALUES (3, 'c', 'z')",
            f"ALTER TABLE {sql_path(root)} ADD COLUMNS (extra string)",
            f"UPDATE {sql_path(root)} SET s = 'q' WHERE id = 1",
        ):
            err = refused(lambda s=statement: spark.sql(s), SessionConfigError)
            assert GUARD_ENABLED_KEY in str(err) and profile in str(err)
            assert tree_state(root) == before, statement
        new = tmp_path / "new"
        ctas = (
            f"CREATE TABLE {sql_path(new)} USING delta TBLPROPERTIES ('{DECLARING[profile]}'='true') "
            "AS SELECT 1 AS id"
        )
        refused(lambda: spark.sql(ctas), SessionConfigError)
        assert tree_state(new) == {}
        spark.range(2).write.format("delta").save(str(tmp_path / "plain"))  # declares nothing: not refused
    assert_untouched(spark, root, before, 2)


# 2. Downgrades


@pytest.mark.parametrize(
    ("profile", "statement"),
    [
        ("writer-v3", "SET TBLPROPERTIES ('delta.enableIcebergWriterCompatV3'='false')"),
        ("writer-v1", "SET TBLPROPERTIES ('delta.enableIcebergWriterCompatV1'='false')"),
        ("writer-v3", "UNSET TBLPROPERTIES ('delta.enableIcebergWriterCompatV3')"),
        ("writer-v1", "UNSET TBLPROPERTIES ('delta.enableIcebergWriterCompatV1')"),
        ("v3", "UNSET TBLPROPERTIES ('delta.enableIcebergCompatV3')"),
    ],
)
def test_a_profile_cannot_be_switched_off(spark: Any, tmp_path: Path, profile: str, statement: str) -> None:
    root = tmp_path / "t"
    make_table(spark, root, profile)
    before = tree_state(root)
    err = refused(lambda: spark.sql(f"ALTER TABLE {sql_path(root)} {statement}"))
    assert err.violations
    assert_untouched(spark, root, before, 2)


def _append_commit(root: Path, actions: list[dict[str, Any]]) -> None:
    version = len(commits(root))
    (root / "_delta_log" / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def test_the_checker_holds_a_table_to_the_writer_feature_its_protocol_lists(
    spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "writer-v3")
    meta = latest(root, "metaData")
    meta["configuration"]["delta.enableIcebergWriterCompatV3"] = "false"
    _append_commit(root, [{"metaData": meta}])
    report = check_table(root, files="all")
    assert report.profile == "writer-v3"
    assert not report.compliant


# 3. A profile switch that the files do not meet


def test_enabling_v3_on_a_table_with_files_is_refused_naming_upgrade(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    spark.range(3).selectExpr("id", "cast(id as string) s").write.format("delta").save(str(root))
    before = tree_state(root)
    err = refused(
        lambda: spark.sql(
            f"ALTER TABLE {sql_path(root)} SET TBLPROPERTIES ('delta.enableIcebergCompatV3'='true')"
        )
    )
    assert "icecompat upgrade" in str(err)
    assert tree_state(root) == before
    assert_readable(spark, root, 3)


def test_moving_a_writer_v1_table_to_writer_v3_without_its_files_is_refused(
    spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "writer-v1")
    before = tree_state(root)
    err = refused(
        lambda: spark.sql(
            f"ALTER TABLE {sql_path(root)} SET TBLPROPERTIES ('delta.enableIcebergWriterCompatV1'='false', "
            "'delta.enableIcebergCompatV2'='false', 'delta.enableIcebergCompatV3'='true', "
            "'delta.enableIcebergWriterCompatV3'='true')"
        )
    )
    assert err.violations
    assert_untouched(spark, root, before, 2)


def test_the_checker_wants_row_ids_on_every_live_file_of_a_row_tracking_table(
    spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "v3")
    add = dict(live_adds(root)[0])
    assert "baseRowId" in add
    copy = f"copy-{uuid.uuid4()}.parquet"
    shutil.copy(root / add["path"], root / copy)
    add.update(path=copy)
    add.pop("baseRowId")
    add.pop("defaultRowCommitVersion", None)
    _append_commit(root, [{"add": add}])
    report = check_table(root, files="all")
    assert report.profile == "v3"
    assert not report.compliant
    assert any(copy in (v.message + str(v.path)) for v in report.violations), report.render_text()


# 4. Refused at the first commit of a multi-commit command


def test_row_tracking_on_a_writer_v1_table_is_refused_before_the_protocol_changes(
    spark: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "writer-v1")
    before = tree_state(root)
    refused(
        lambda: spark.sql(
            f"ALTER TABLE {sql_path(root)} SET TBLPROPERTIES ('delta.enableRowTracking'='true')"
        )
    )
    assert_untouched(spark, root, before, 2)


@pytest.mark.parametrize(
    "properties",
    [
        {"delta.enableRowTracking": "true", "delta.enableIcebergCompatV3": "true"},
        {"delta.enableIcebergCompatV3": "true", "delta.enableRowTracking": "true"},
        {
            "delta.enableRowTracking": "true",
            "delta.enableIcebergCompatV3": "true",
            "delta.enableIcebergWriterCompatV3": "true",
        },
    ],
    ids=["row-tracking-then-v3", "v3-then-row-tracking", "writer-v3"],
)
def test_row_tracking_with_a_profile_on_a_plain_table_is_refused_before_the_protocol_changes(
    spark: Any, tmp_path: Path, properties: dict[str, str]
) -> None:
    """Delta turns row tracking on in several commits (protocol, backfill, then the properties): a
    profile its old files cannot meet is refused at the first, naming the fix."""
    root = tmp_path / "t"
    spark.range(3).selectExpr("id", "cast(id as string) s").write.format("delta").save(str(root))
    before = tree_state(root)
    pairs = ", ".join(f"'{k}'='{v}'" for k, v in properties.items())
    err = refused(lambda: spark.sql(f"ALTER TABLE {sql_path(root)} SET TBLPROPERTIES ({pairs})"))
    assert "icecompat upgrade" in str(err)
    assert len(commits(root)) == 1, [list(a) for c in commits(root) for a in c]
    assert tree_state(root) == before
    report = check_table(root, files="all")  # still a plain table: it declares and is held to nothing
    assert report.declared is None and report.profile is None, report.render_text()
    assert "rowTracking" not in json.dumps(latest(root, "protocol"))
    assert_readable(spark, root, 3)


def test_row_tracking_with_v3_on_an_empty_plain_table_lands_compliant(spark: Any, tmp_path: Path) -> None:
    """With no file to hold to the profile, the same command lands (the guard refuses only what the
    files cannot meet)."""
    root = tmp_path / "t"
    spark.sql(f"CREATE TABLE {sql_path(root)} (id bigint, s string) USING delta")
    spark.sql(
        f"ALTER TABLE {sql_path(root)} SET TBLPROPERTIES "
        "('delta.enableRowTracking'='true', 'delta.enableIcebergCompatV3'='true')"
    )
    spark.sql(f"INSERT INTO {sql_path(root)} VALUES (1, 'a'), (2, 'b')")
    assert_compliant(root)
    assert check_table(root, files="all").profile == "v3"
    assert_readable(spark, root, 2)


# 5. Shallow clones: refused (their files belong to another table)


@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_a_shallow_clone_of_a_profile_table_is_refused(spark: Any, tmp_path: Path, profile: str) -> None:
    root = tmp_path / "t"
    make_table(spark, root, profile)
    clone = tmp_path / "clone"
    before = tree_state(root)
    err = refused(lambda: spark.sql(f"CREATE TABLE {sql_path(clone)} SHALLOW CLONE {sql_path(root)}"))
    assert "SHALLOW" in str(err).upper()
    assert tree_state(clone) == {}  # no file and no directory (Delta makes _delta_log/_staged_commits)
    assert_untouched(spark, root, before, 2)


# 6. A refusal at commit time leaves no directory behind


def test_a_refused_commit_leaves_no_directory(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    spark.sql("SELECT 1 AS id, 'a' AS d").write.format("delta").partitionBy("d").save(str(root))
    before = tree_state(root)
    with session_conf(spark, {"spark.icecompat.profile": "v3"}):
        refused(
            lambda: (
                spark.sql("SELECT 2 AS id, 'new' AS d").write.format("delta").mode("append").save(str(root))
            )
        )
    assert tree_state(root) == before


# 7. A refusal from plain spark.sql is a CompatViolation without a Java stack


def test_sql_refusals_are_compat_violations_like_compat_write_raises(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "writer-v1")
    before = tree_state(root)
    with pytest.raises(CompatViolation) as sql_err:  # plain spark.sql: no translate_exception
        spark.sql(f"ALTER TABLE {sql_path(root)} ADD COLUMNS (b tinyint)")
    df = spark.sql("SELECT 1 AS id, 'a' AS s, 'x' AS d, cast(1 AS tinyint) AS b")
    with pytest.raises(CompatViolation) as py_err:
        compat_write(df, str(root), mode="append", profile="writer-v1", options={"mergeSchema": "true"})
    assert type(sql_err.value) is CompatViolation
    assert sql_err.value.violations == py_err.value.violations
    message = str(sql_err.value)
    assert "\tat " not in message and "java." not in message and "Py4J" not in message
    assert_untouched(spark, root, before, 2)


# 8. Delta's own write rules hold for SQL and DataFrame writes too, and the checker reports them


def test_sql_table_properties_in_config_namespaces_are_refused(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    err = refused(
        lambda: spark.sql(
            f"CREATE TABLE {sql_path(root)} USING delta TBLPROPERTIES ('delta.enableIcebergCompatV3'='true', "
            "'parquet.crypto.factory.class'='x.Y') AS SELECT 1 AS id"
        )
    )
    assert "DELTA-WRITE-CONFIG-PROPERTY" in err.rules
    assert tree_state(root) == {}
    existing = tmp_path / "e"
    make_table(spark, existing, "v3")
    before = tree_state(existing)
    err = refused(
        lambda: spark.sql(f"ALTER TABLE {sql_path(existing)} SET TBLPROPERTIES ('fs.file.impl'='x.Y')")
    )
    assert "DELTA-WRITE-CONFIG-PROPERTY" in err.rules
    assert_untouched(spark, existing, before, 2)


def test_the_checker_reports_config_namespace_properties(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_table(spark, root, "v3")
    meta = latest(root, "metaData")
    meta["configuration"]["spark.sql.parquet.output.committer.class"] = "x.Y"
    _append_commit(root, [{"metaData": meta}])
    report = check_table(root, files="all")
    assert "DELTA-WRITE-CONFIG-PROPERTY" in {v.rule for v in report.violations}
