"""``upgrade_table`` on tables plain delta-spark wrote: before, the checker names exactly what falls
short; after one upgrade commit, the table checks clean, reads back the same rows, and a second upgrade
changes nothing.

What the upgrade did is asserted from the table's own files (the log's JSON and the Parquet footers,
read with tests/support.py, which does not use the package's reader or rules).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table, violation_file
from icecompat_writer.upgrading import api as upgrade_api
from icecompat_writer.upgrading import upgrade_table
from tests import support
from tests.upgrading.tables import INT96, Tables, sql
from tests.writing.test_compat_write import assert_guarantees, assert_reads_equal

PROFILES = ["v3", "writer-v1", "writer-v3"]
OPERATION = "REORG TABLE UPGRADE UNIFORM"

PROPERTIES = {
    "v3": {"ICV3-ENABLED", "ICV3-FEATURE", "ICV3-ROW-TRACKING", "ICV3-ROW-TRACKING-FEATURES"},
    "writer-v1": {"ICV2-ENABLED", "ICV2-FEATURE", "IWC1-ENABLED", "IWC1-FEATURE"},
    "writer-v3": {
        "ICV3-ENABLED",
        "ICV3-FEATURE",
        "ICV3-ROW-TRACKING",
        "ICV3-ROW-TRACKING-FEATURES",
        "IWC3-ENABLED",
        "IWC3-FEATURE",
    },
}


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    return Tables(spark, tmp_path_factory.mktemp("upgrade"))


def compat(profile: str) -> str:
    """The rule prefix of a profile's IcebergCompat version."""
    return "ICV2" if profile == "writer-v1" else "ICV3"


def expected_before(table: str, profile: str) -> list[str]:
    """The rules a plain delta-spark table violates, by what the table is and what the profile needs."""
    cv, writer = compat(profile), profile.startswith("writer-")
    rules = set(PROPERTIES[profile]) | {f"{cv}-NESTED-IDS"}  # delta-spark assigns no nested ids
    if table == "int96":  # no column mapping at all
        rules |= {
            "CM-IDS-ASSIGNED",
            "CM-WRITER-FEATURE",
            "PROTO-READER-COLUMN-MAPPING",
            "PROTO-WRITER-VERSION",
        }
        rules |= {"IWC1-ID-MODE" if writer else "ICV3-COLUMN-MAPPING-MODE", f"{cv}-TIMESTAMP-INT64"}
    if table == "id_mode" and writer:
        rules |= {"IWC1-PHYSICAL-NAME"}  # col-<uuid>
    if table == "name_partitioned":
        rules |= {f"{cv}-PARTITION-MATERIALIZED"} | (
            {"IWC1-ID-MODE", "IWC1-PHYSICAL-NAME"} if writer else set()
        )
    return sorted(rules)


def live_paths(root: Path) -> set[str]:
    return {a["path"] for a in support.live_adds(root)}


def live_adds_with_dvs(root: Path) -> list[dict[str, Any]]:
    """Live AddFiles, a file being live per (path, deletion vector) as the protocol keys it: a DELETE
    with deletion vectors commits an add and a remove of the same path."""

    def key(action: dict[str, Any]) -> tuple[str, str]:
        dv = action.get("deletionVector") or {}
        return action["path"], f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}@{dv.get('offset')}"

    live: dict[tuple[str, str], dict[str, Any]] = {}
    for actions in support.commits(root):
        for a in actions:
            if "remove" in a:
                live.pop(key(a["remove"]), None)
        for a in actions:
            if "add" in a:
                live[key(a["add"])] = a["add"]
    return list(live.values())


def flagged(report: Any, suffix: str) -> set[str]:
    """The data files the report's violations of ``<prefix>-<suffix>`` name."""
    return {violation_file(v) or "" for v in report.violations if v.rule.endswith(suffix)}


def last_commit(root: Path) -> list[dict[str, Any]]:
    return support.commits(root)[-1]


def schema_of(root: Path) -> dict[str, Any]:
    return json.loads(support.latest(root, "metaData")["schemaString"])


def ids_by_name(schema: dict[str, Any]) -> dict[str, int]:
    return {f["name"]: f["metadata"]["delta.columnMapping.id"] for f in schema["fields"]}


def assert_upgrade_commit(root: Path, commits_before: int) -> list[dict[str, Any]]:
    """Exactly one new commit, made as Delta's upgrade operation, changing no data."""
    assert len(support.commits(root)) == commits_before + 1
    actions = last_commit(root)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == OPERATION
    for a in actions:
        for kind in ("add", "remove"):
            if kind in a:
                assert a[kind]["dataChange"] is False, f"{kind} {a[kind]['path']} must not change data"
    return actions


def assert_second_upgrade_changes_nothing(spark: SparkSession, root: Path, profile: str) -> None:
    log_before = support.tree_digest(root / "_delta_log")
    again = upgrade_table(spark, root, profile)
    assert not again.needed and again.version is None and not again.committed
    assert "nothing to upgrade" in str(again)
    assert support.tree_digest(root / "_delta_log") == log_before


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("table", ["int96", "id_mode", "name_partitioned"])
def test_plain_tables_upgrade_to_every_profile(
    spark: SparkSession, tables: Tables, tmp_path: Path, table: str, profile: str
) -> None:
    root = tables.copy(table, tmp_path / table)
    files = live_paths(root)
    schema_before = schema_of(root)
    report = check_table(root, profile)
    assert sorted(report.by_rule()) == expected_before(table, profile)
    # the file rules name exactly the files an independent look finds short
    if table == "int96":
        assert {f for f in files if "INT96" in support.physical_types(root / f).values()} == files
        assert flagged(report, "TIMESTAMP-INT64") == files
    if table == "name_partitioned":
        p = next(f for f in schema_before["fields"] if f["name"] == "p")
        column = p["metadata"]["delta.columnMapping.physicalName"]
        assert not any(
            column in support.parquet_field_ids(support.data_file(root, a)) for a in support.live_adds(root)
        )
        assert flagged(report, "PARTITION-MATERIALIZED") == files
    commits_before = len(support.commits(root))

    result = upgrade_table(spark, root, profile)

    assert result.committed and result.version == commits_before and result.read_version == commits_before - 1
    assert result.new_table_state == profile.startswith("writer-")  # col-<id> names need a new state
    # every file falls short here: none has the nested ids (nor, without column mapping, any id)
    assert {f.path for f in result.rewritten} == files and result.recommitted == ()
    actions = assert_upgrade_commit(root, commits_before)
    assert {a["remove"]["path"] for a in actions if "remove" in a} == files
    assert live_paths(root) == set(result.added) and not files & set(result.added)
    assert result.rows == 6
    after = check_table(root, profile, files="all")
    assert after.compliant, after.render_text()
    assert after.files_checked == after.files_total == len(result.added)
    assert_guarantees(root, profile)
    assert_reads_equal(spark, root, spark.read.format("delta").load(str(tables.original(table))))
    if table != "int96":  # columns that had ids keep them, whatever their new physical names
        assert ids_by_name(schema_of(root)) == ids_by_name(schema_before)
    assert_second_upgrade_changes_nothing(spark, root, profile)


@pytest.mark.spark
def test_partial_upgrade_rewrites_only_the_short_files(
    spark: SparkSession, tables: Tables, tmp_path: Path
) -> None:
    root = tables.copy("partial", tmp_path / "partial")
    adds = {a["path"]: a for a in support.live_adds(root)}
    assert len(adds) == 4
    # independent observations: which file has INT96 timestamps, which AddFile has no statistics
    int96 = {p for p in adds if "INT96" in support.physical_types(root / p).values()}
    no_stats = {p for p, a in adds.items() if "numRecords" not in (a.get("stats") or "")}
    assert len(int96) == len(no_stats) == 1 and int96 != no_stats
    short = int96 | no_stats
    kept = set(adds) - short
    report = check_table(root, "v3")
    assert sorted(report.by_rule()) == sorted(PROPERTIES["v3"] | {"ICV3-NUM-RECORDS", "ICV3-TIMESTAMP-INT64"})
    assert flagged(report, "TIMESTAMP-INT64") == int96 and flagged(report, "NUM-RECORDS") == no_stats
    kept_bytes = {p: support.tree_digest(root)[p] for p in kept}

    result = upgrade_table(spark, root, "v3")

    assert not result.new_table_state
    assert {f.path: f.rules for f in result.rewritten} == {
        next(iter(int96)): ("ICV3-TIMESTAMP-INT64",),
        next(iter(no_stats)): ("ICV3-NUM-RECORDS",),
    }
    # the other files stay where they are, byte for byte; they are only re-added to get row ids
    assert set(result.recommitted) == kept
    assert live_paths(root) == kept | set(result.added)
    assert {p: support.tree_digest(root)[p] for p in kept} == kept_bytes
    actions = assert_upgrade_commit(root, 4)
    assert {a["remove"]["path"] for a in actions if "remove" in a} == short
    readded = {a["add"]["path"]: a["add"] for a in actions if "add" in a and a["add"]["path"] in kept}
    assert set(readded) == kept
    for path, add in readded.items():
        assert add["stats"] == adds[path]["stats"], "a re-added file keeps its statistics"
        assert add["baseRowId"] is not None and add["defaultRowCommitVersion"] == 4
    row_ids = sorted((a["add"]["baseRowId"], a["add"]["path"]) for a in actions if "add" in a)
    assert len({r for r, _ in row_ids}) == len(row_ids), "row ids never overlap"
    after = check_table(root, "v3", files="all")
    assert after.compliant, after.render_text()
    assert_guarantees(root, "v3")
    assert_reads_equal(spark, root, spark.read.format("delta").load(str(tables.original("partial"))))
    assert_second_upgrade_changes_nothing(spark, root, "v3")


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v3"])
def test_deletion_vectors_are_applied_by_the_rewrite(
    spark: SparkSession, tables: Tables, tmp_path: Path, profile: str
) -> None:
    root = tables.copy("deletion_vectors", tmp_path / "dv")
    adds = live_adds_with_dvs(root)
    assert len(adds) == 2 and all(a.get("deletionVector") for a in adds)
    report = check_table(root, profile)
    assert f"{compat(profile)}-TIMESTAMP-INT64" in report.by_rule()

    result = upgrade_table(spark, root, profile)

    assert {f.path for f in result.rewritten} == {a["path"] for a in adds}
    assert result.rows == sum(f.rows or 0 for f in result.rewritten) == 8  # 12 rows, 4 deleted
    now = live_adds_with_dvs(root)
    assert {a["path"] for a in now} == set(result.added)
    assert not any(a.get("deletionVector") for a in now)
    assert sum(support.parquet_rows(support.data_file(root, a)) for a in now) == 8
    assert check_table(root, profile, files="all").compliant
    expected = spark.read.format("delta").load(str(tables.original("deletion_vectors")))
    assert_reads_equal(spark, root, expected)
    assert_second_upgrade_changes_nothing(spark, root, profile)


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v3"])
def test_rewritten_rows_keep_their_row_ids_and_commit_versions(
    spark: SparkSession, tables: Tables, tmp_path: Path, profile: str
) -> None:
    root = tables.copy("row_tracking", tmp_path / "rt")

    def row_tracking() -> list[tuple[int, int, int]]:
        frame = spark.read.format("delta").load(str(root))
        cols = frame.select("id", "_metadata.row_id", "_metadata.row_commit_version").collect()
        return sorted((r[0], r[1], r[2]) for r in cols)

    before = row_tracking()
    assert (101, 1, 1) in before  # the updated row kept its row id 1, with commit version 1

    result = upgrade_table(spark, root, profile)

    assert result.new_table_state == (profile == "writer-v3")
    assert len(result.rewritten) == result.files_total
    assert row_tracking() == before
    info = next(a["commitInfo"] for a in last_commit(root) if "commitInfo" in a)
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    report = check_table(root, profile, files="all")  # incl. Iceberg's ids on the materialized columns
    assert report.compliant, report.render_text()
    assert_second_upgrade_changes_nothing(spark, root, profile)


@pytest.mark.spark
def test_a_type_change_iceberg_cannot_apply_gets_a_new_table_state(
    spark: SparkSession, tables: Tables, tmp_path: Path
) -> None:
    root = tables.copy("widened", tmp_path / "widened")
    assert "ICV3-TYPE-WIDENING" in check_table(root, "v3").by_rule()

    result = upgrade_table(spark, root, "v3")

    assert result.new_table_state and [v.rule for v in result.reasons] == ["ICV3-TYPE-WIDENING"]
    x = next(f for f in schema_of(root)["fields"] if f["name"] == "x")
    assert x["type"] == "double" and "delta.typeChanges" not in x["metadata"]
    assert check_table(root, "v3", files="all").compliant
    assert_reads_equal(spark, root, spark.read.format("delta").load(str(tables.original("widened"))))
    assert_second_upgrade_changes_nothing(spark, root, "v3")


@pytest.mark.spark
@pytest.mark.parametrize(("table", "profile"), [("partial", "v3"), ("name_partitioned", "writer-v1")])
def test_dry_run_changes_nothing_and_lists_the_files(
    spark: SparkSession, tables: Tables, tmp_path: Path, table: str, profile: str
) -> None:
    root = tables.copy(table, tmp_path / table)
    before = support.tree_digest(root)

    planned = upgrade_table(None, root, profile, dry_run=True)  # no Spark needed

    assert support.tree_digest(root) == before, "a dry run leaves every byte of the table as it was"
    assert planned.dry_run and planned.needed and planned.version is None
    assert planned.rewritten and planned.changes
    text = str(planned)
    assert text.startswith("dry run:") and "nothing was changed" in text
    for f in planned.rewritten:
        assert f.path in text
    assert {c.rule for c in planned.changes} >= {"ICV3-ENABLED" if profile == "v3" else "IWC1-ENABLED"}

    done = upgrade_table(spark, root, profile)
    assert done.rewritten == planned.rewritten and done.recommitted == planned.recommitted
    assert done.changes == planned.changes and done.new_table_state == planned.new_table_state


@pytest.mark.spark
def test_a_concurrent_append_makes_the_upgrade_plan_again(
    spark: SparkSession, tables: Tables, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tables.copy("partial", tmp_path / "race")
    planned_at: list[int] = []
    real_plan = upgrade_api.plan_upgrade

    def plan_then_race(*args: Any, **kwargs: Any) -> Any:
        p = real_plan(*args, **kwargs)
        if not planned_at:  # a plain writer lands a short file while the first attempt writes
            sql(spark, f"INSERT INTO delta.`{root}` SELECT id, current_timestamp() FROM range(40, 43)", INT96)
        planned_at.append(p.version)
        return p

    monkeypatch.setattr(upgrade_api, "plan_upgrade", plan_then_race)
    result = upgrade_table(spark, root, "v3")

    assert planned_at == [3, 4] and result.attempts == 2 and result.read_version == 4
    raced = {a["add"]["path"] for a in support.commits(root)[4] if "add" in a}
    assert raced <= {f.path for f in result.rewritten}
    assert check_table(root, "v3", files="all").compliant
    assert spark.read.format("delta").load(str(root)).count() == 15
    # the losing attempt left no file behind: every Parquet file is live, was live before, or was removed
    listed = {str(p.relative_to(root)) for p in root.rglob("*.parquet")}
    logged = {a[k]["path"] for c in support.commits(root) for a in c for k in ("add", "remove") if k in a}
    assert listed <= logged
