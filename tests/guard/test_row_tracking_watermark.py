"""The row ID high-water mark a commit reads: from the snapshot's checksum (the driver agent's hook)
or from Delta's state reconstruction, the two must agree on every version of real tables.

Every commit to a row-tracking table reads the ``delta.rowTracking`` domain of its read snapshot
(``RowId.extractHighWatermark``). The agent routes that lookup to ``HighWatermark.fromSnapshot``,
which answers from the snapshot's ``<version>.crc`` when it lists the table's domains; a wrong answer
would hand out row IDs twice. Each test walks a table's versions and compares, per version, what the
checksum says, what Delta's own path (``computedState.domainMetadata``) says, and what the patched
``RowId.extractHighWatermark`` returns; and reads the rows' ``_metadata.row_id``, which must be
distinct.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from icecompat_writer.jvm import bridge
from tests.support import commits, session_conf

_names = itertools.count()


def _snapshot(spark: Any, root: Path, version: int) -> Any:
    """Delta's snapshot of ``root`` at ``version`` (a fresh read: it carries that version's checksum)."""
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(root))
    defaults = [getattr(log, f"getSnapshotAt$default${i}")() for i in (2, 3, 4)]
    return log.getSnapshotAt(version, *defaults)


def _marks(spark: Any, root: Path) -> list[tuple[int | None, int, int]]:
    """Per version of ``root``: (the checksum's high-water mark or None when it cannot answer, Delta's
    state reconstruction's, ``RowId.extractHighWatermark``'s); -1 means no mark yet."""
    hw = spark._jvm.io.icecompat.shim.HighWatermark
    # RowId's private[delta] methods have no static forwarder: call the Scala object itself
    row_id = getattr(getattr(spark._jvm.org.apache.spark.sql.delta, "RowId$"), "MODULE$")
    out = []
    for version in range(len(commits(root))):
        snap = _snapshot(spark, root, version)
        got = row_id.extractHighWatermark(snap)
        out.append((hw.fromChecksum(snap), hw.fromState(snap), got.get() if got.isDefined() else -1))
    return out


def _log_marks(root: Path) -> list[int]:
    """The high-water marks the commits themselves wrote (``delta.rowTracking`` domain actions)."""
    return [
        json.loads(a["domainMetadata"]["configuration"])["rowIdHighWaterMark"]
        for commit in commits(root)
        for a in commit
        if a.get("domainMetadata", {}).get("domain") == "delta.rowTracking"
    ]


def _assert_row_ids_distinct(spark: Any, root: Path) -> None:
    ids = [r[0] for r in spark.sql(f"SELECT _metadata.row_id FROM delta.`{root}`").collect()]
    assert ids and len(set(ids)) == len(ids), ids


def _v3_table(spark: Any, root: Path) -> None:
    spark.sql(
        f"CREATE TABLE delta.`{root}` (id BIGINT, s STRING) USING delta "
        "TBLPROPERTIES ('delta.enableIcebergCompatV3' = 'true')"
    )


def test_checksum_and_state_agree_after_appends_and_dml(guarded: Any, tmp_path: Path) -> None:
    root = tmp_path / f"rt_{next(_names)}"
    _v3_table(guarded, root)
    guarded.sql(f"INSERT INTO delta.`{root}` VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    guarded.sql(f"INSERT INTO delta.`{root}` VALUES (4, 'd')")
    guarded.sql(f"UPDATE delta.`{root}` SET s = 'u' WHERE id = 2")
    guarded.sql(
        f"MERGE INTO delta.`{root}` t USING (SELECT 3L AS id, 'm' AS s UNION ALL SELECT 9L, 'n') u "
        "ON t.id = u.id WHEN MATCHED THEN UPDATE SET s = u.s WHEN NOT MATCHED THEN INSERT *"
    )
    guarded.sql(f"DELETE FROM delta.`{root}` WHERE id = 1")
    guarded.sql(f"INSERT INTO delta.`{root}` VALUES (10, 'e')")

    marks = _marks(guarded, root)
    assert all(crc is not None for crc, _, _ in marks), marks  # every version answered by its checksum
    assert [crc for crc, _, _ in marks] == [state for _, state, _ in marks] == [got for _, _, got in marks]
    assert marks[-1][1] == max(_log_marks(root))
    _assert_row_ids_distinct(guarded, root)
    assert bridge.guard_status(guarded)["agent_row_tracking"] == "patched"


def test_checksums_without_domains_and_tables_without_checksums_use_deltas_path(
    guarded: Any, tmp_path: Path
) -> None:
    # A checksum lists all of a table's domains or none: none when there are more than
    # domainMetadatasInCrc.maxAllowed (0 here, so the one delta.rowTracking domain is too many).
    few = tmp_path / f"rt_{next(_names)}"
    with session_conf(guarded, {"spark.databricks.delta.domainMetadatasInCrc.maxAllowed": "0"}):
        _v3_table(guarded, few)
        guarded.sql(f"INSERT INTO delta.`{few}` VALUES (1, 'a'), (2, 'b')")
        guarded.sql(f"INSERT INTO delta.`{few}` VALUES (3, 'c')")
    # no checksum files at all
    bare = tmp_path / f"rt_{next(_names)}"
    with session_conf(guarded, {"spark.databricks.delta.writeChecksumFile.enabled": "false"}):
        _v3_table(guarded, bare)
        guarded.sql(f"INSERT INTO delta.`{bare}` VALUES (1, 'a'), (2, 'b')")
        guarded.sql(f"INSERT INTO delta.`{bare}` VALUES (3, 'c')")
        guarded.sql(f"UPDATE delta.`{bare}` SET s = 'u' WHERE id = 2")
    assert not list((bare / "_delta_log").glob("0*.crc"))  # no <version>.crc (only Hadoop's .json.crc)
    # and a table whose later commits have checksums again, on top of versions without
    guarded.sql(f"INSERT INTO delta.`{bare}` VALUES (4, 'd')")

    for root in (few, bare):
        marks = _marks(guarded, root)
        # both tables start with versions whose checksum cannot answer: Delta's own path does
        assert marks[1][0] is None, marks
        assert [state for _, state, _ in marks] == [got for _, _, got in marks], marks
        assert all(crc == state for crc, state, _ in marks if crc is not None), marks
        assert marks[-1][1] == max(_log_marks(root))
        _assert_row_ids_distinct(guarded, root)
