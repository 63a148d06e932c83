"""``ALTER TABLE ... SET TBLPROPERTIES`` enabling IcebergCompatV3 on a table with row tracking enabled.

delta-spark 4.4 refuses that command at its commit (``CheckNoRowTrackingBeforeUpgradeV3``, a raw
``UnsupportedOperationException``). The guard judges the command's metadata update, which Delta makes
before that check runs, and refuses it first with ``DELTA-WRITE-ALTER-V3-ROW-TRACKING``, naming the
fix (``icecompat upgrade``); the table is left byte for byte as it was. The unit tests judge the same
states without Spark: the rule, its absence for other commands, and the checker's fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation
from icecompat_writer.jvm import service
from icecompat_writer.rules.verdict import Audit, Plan, decide
from icecompat_writer.upgrading import upgrade_table
from tests.support import commits, latest, tree_state

RULE = "DELTA-WRITE-ALTER-V3-ROW-TRACKING"
SCHEMA = json.dumps(
    {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
)
ROW_TRACKING = Protocol(1, 7, None, frozenset({"rowTracking", "domainMetadata"}))


def _metadata(**configuration: str) -> Metadata:
    return Metadata(schema_string=SCHEMA, configuration=configuration, id="t")


class _State:
    def __init__(self, protocol_: Protocol, metadata: Metadata) -> None:
        self.protocol, self.metadata = protocol_, metadata


def _rule_hits(found: list[Any]) -> list[Any]:
    return [v for v in found if v.rule == RULE]


# --- the rule, judged without Spark -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "profile"),
    [
        ({"delta.enableIcebergCompatV3": "true"}, "v3"),
        ({"delta.enableIcebergCompatV3": "TRUE", "delta.enableIcebergWriterCompatV3": "true"}, "writer-v3"),
    ],
)
def test_set_properties_enabling_v3_after_row_tracking_is_refused_naming_upgrade(
    asked: dict[str, str], profile: str
) -> None:
    before = _State(ROW_TRACKING, _metadata(**{"delta.enableRowTracking": "true"}))
    after = _metadata(**{"delta.enableRowTracking": "true", **asked})
    [hit] = decide(Plan(None, after, ROW_TRACKING, before, alter=True)).violations
    assert hit.rule == RULE and hit.profile == profile
    assert f"icecompat upgrade --profile {profile}" in hit.fix
    assert "CheckNoRowTrackingBeforeUpgradeV3" in hit.message


@pytest.mark.parametrize(
    ("previous_protocol", "previous_configuration", "set_properties"),
    [
        (ROW_TRACKING, {"delta.enableRowTracking": "true"}, False),  # another command (a write, REORG)
        (ROW_TRACKING, {"delta.enableRowTracking": "false"}, True),  # supported, not enabled
        (Protocol(1, 7, None, frozenset({"domainMetadata"})), {"delta.enableRowTracking": "true"}, True),
        (ROW_TRACKING, {"delta.enableRowTracking": "true", "delta.enableIcebergCompatV3": "true"}, True),
    ],
    ids=["not-set-properties", "row-tracking-off", "no-row-tracking-feature", "already-v3"],
)
def test_what_delta_spark_accepts_is_not_refused(
    previous_protocol: Protocol, previous_configuration: dict[str, str], set_properties: bool
) -> None:
    before = _State(previous_protocol, _metadata(**previous_configuration))
    after = _metadata(**{**previous_configuration, "delta.enableIcebergCompatV3": "true"})
    judged = decide(Plan(None, after, previous_protocol, before, alter=set_properties))
    assert not _rule_hits(list(judged.violations))


def test_the_checker_points_icv3_enabled_at_the_upgrade_on_a_row_tracking_table() -> None:
    """An audit under v3 says how to enable IcebergCompatV3 where SET TBLPROPERTIES would fail."""
    tracked = decide(Audit("v3", _metadata(**{"delta.enableRowTracking": "true"}), ROW_TRACKING)).violations
    [enabled] = [v for v in tracked if v.rule == "ICV3-ENABLED"]
    assert RULE in enabled.fix and "icecompat upgrade --profile v3" in enabled.fix
    plain = decide(Audit("v3", _metadata(), Protocol(1, 2))).violations
    [enabled] = [v for v in plain if v.rule == "ICV3-ENABLED"]
    assert "icecompat upgrade" not in enabled.fix


def _plan_metadata(root: Path, command: dict[str, str] | None) -> dict[str, Any]:
    """The service's answer to an update of an empty row-tracking table (a log of one commit) that
    enables IcebergCompatV3, made by a SET TBLPROPERTIES (``command``) or by another command."""
    old = _metadata(**{"delta.enableRowTracking": "true", "delta.columnMapping.mode": "name"})
    old_protocol = Protocol(
        3, 7, frozenset({"columnMapping"}), frozenset({"columnMapping", "rowTracking", "domainMetadata"})
    )
    (root / "_delta_log").mkdir(parents=True, exist_ok=True)
    first = [{"protocol": old_protocol.to_json()}, {"metaData": old.to_json()}]
    (root / "_delta_log" / f"{0:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in first))
    req: dict[str, Any] = {
        "op": "plan_metadata",
        "table": str(root),
        "table_exists": True,
        "old_protocol": old_protocol.to_json(),
        "old_metadata": old.to_json(),
        "new_metadata": old.with_configuration(
            {**old.configuration, "delta.enableIcebergCompatV3": "true"}
        ).to_json(),
    }
    if command is not None:
        req["command_properties"] = command
    return service.handle(req)


def test_the_rule_service_refuses_the_command_and_plans_other_operations(tmp_path: Path) -> None:
    """The service judges the metadata update as the SET TBLPROPERTIES the JVM says is running; the
    same update made by another command is planned (an empty table: no file to hold to v3)."""
    refused = _plan_metadata(tmp_path, {"delta.enableIcebergCompatV3": "true"})
    assert refused["ok"] is False, refused
    assert [v["rule"] for v in refused["violations"]] == [RULE]
    assert "icecompat upgrade --profile v3" in refused["report"]
    planned = _plan_metadata(tmp_path, None)
    assert planned["ok"] is True and planned["profile"] == "v3", planned


# --- real Spark, real Delta, through the guard -------------------------------------------------------


def _row_tracking_table(spark: Any, target: str, rows: bool) -> None:
    spark.sql(
        f"CREATE TABLE {target} (id BIGINT, s STRING) USING delta TBLPROPERTIES "
        "('delta.enableRowTracking'='true', 'delta.columnMapping.mode'='name')"
    )
    if rows:
        spark.sql(f"INSERT INTO {target} VALUES (1, 'a'), (2, 'b')")


def _assert_refused(spark: Any, target: str, root: Path, properties: str) -> CompatViolation:
    before = tree_state(root)
    with pytest.raises(CompatViolation) as info:
        spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({properties})")
    assert type(info.value) is CompatViolation
    assert RULE in {v.rule for v in info.value.violations}, str(info.value)
    assert tree_state(root) == before  # every file and directory, byte for byte
    return info.value


@pytest.mark.spark
def test_unguarded_delta_spark_throws_its_raw_error(spark: Any, tmp_path: Path) -> None:
    """What the rule stands for: without the guard delta-spark 4.4 refuses the command itself, with an
    engine error that names neither a rule nor the upgrade."""
    root = tmp_path / "t"
    target = f"delta.`{root}`"
    _row_tracking_table(spark, target, rows=False)
    spark.conf.set("spark.icecompat.guard.enabled", "false")
    try:
        with pytest.raises(Exception) as info:
            spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ('delta.enableIcebergCompatV3'='true')")
    finally:
        spark.conf.unset("spark.icecompat.guard.enabled")
    assert not isinstance(info.value, CompatViolation)
    assert "RowTracking enabled is not supported" in str(info.value), str(info.value)
    assert len(commits(root)) == 1


@pytest.mark.spark
def test_path_table_is_refused_before_delta_and_the_upgrade_then_enables_v3(
    guarded: Any, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    target = f"delta.`{root}`"
    _row_tracking_table(guarded, target, rows=True)
    read = guarded.read.format("delta").load(str(root)).select("_metadata.row_id")
    ids_before = sorted(r[0] for r in read.collect())
    err = _assert_refused(guarded, target, root, "'delta.enableIcebergCompatV3'='true'")
    assert "icecompat upgrade --profile v3" in str(err)
    # the fix the refusal names works, and keeps the rows' ids
    upgrade_table(guarded, str(root), "v3")
    assert latest(root, "metaData")["configuration"]["delta.enableIcebergCompatV3"] == "true"
    got = guarded.read.format("delta").load(str(root)).select("id", "_metadata.row_id").collect()
    assert sorted(r[1] for r in got) == ids_before


@pytest.mark.spark
def test_catalog_table_is_refused_the_same_way(guarded: Any) -> None:
    """A table named in the session catalog, empty: nothing but the command stands in the way."""
    name = "alter_v3_row_tracking"
    guarded.sql(f"DROP TABLE IF EXISTS {name}")
    _row_tracking_table(guarded, name, rows=False)
    try:
        location = guarded.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
        root = Path(location.removeprefix("file:"))
        err = _assert_refused(guarded, name, root, "'delta.enableIcebergCompatV3'='true'")
        assert "icecompat upgrade --profile v3" in str(err)
        assert len(commits(root)) == 1
        assert "delta.enableIcebergCompatV3" not in latest(root, "metaData")["configuration"]
    finally:
        guarded.sql(f"DROP TABLE IF EXISTS {name}")
