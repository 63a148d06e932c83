"""Tables ``upgrade_table`` refuses: the exception type names the kind of refusal, its violations the
rule and the reason, and the table is left byte for byte as it was (nothing written, nothing deleted).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.errors import CompatViolation, TableReadError, UpgradeRefused
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.planning import UnknownProfileError
from icecompat_writer.upgrading import upgrade_table
from icecompat_writer.writing.api import compat_write
from tests import support
from tests.upgrading.tables import Tables, sql


@pytest.fixture(scope="module")
def tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    return Tables(spark, tmp_path_factory.mktemp("refusals"))


def refused(spark: SparkSession, root: Path, profile: str, kind: type[Exception]) -> pytest.ExceptionInfo:
    """Upgrade ``root``, expect ``kind`` exactly, and check the table did not change at all."""
    before = support.tree_digest(root)
    with pytest.raises(kind) as info:
        upgrade_table(spark, root, profile)
    assert type(info.value) is kind
    assert support.tree_digest(root) == before, "a refused upgrade leaves every byte of the table"
    return info


@pytest.mark.spark
def test_deletion_vectors_cannot_become_writer_v1(
    spark: SparkSession, tables: Tables, tmp_path: Path
) -> None:
    root = tables.copy("deletion_vectors", tmp_path / "dv")
    err = refused(spark, root, "writer-v1", CompatViolation).value
    # Delta cannot drop the deletionVectors feature in a commit; IcebergWriterCompatV1 does not allow it
    assert err.rules == ["ICV2-NO-DELETION-VECTORS", "IWC1-FEATURE-ALLOWLIST"]
    assert "no rewrite can fix these" in str(err)
    assert any("deletionVectors" in v.message for v in err.violations)


@pytest.mark.spark
def test_types_and_features_the_profile_forbids(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "cdf"
    sql(
        spark,
        f"CREATE TABLE delta.`{root}` (id BIGINT, b TINYINT) USING delta TBLPROPERTIES "
        "('delta.columnMapping.mode'='id', 'delta.enableChangeDataFeed'='true')",
    )
    sql(spark, f"INSERT INTO delta.`{root}` VALUES (1, 1), (2, 2)")
    err = refused(spark, root, "writer-v1", CompatViolation).value
    assert err.rules == ["IWC1-NO-BYTE-SHORT", "IWC1-NO-CHANGE-DATA-FEED"]
    assert [v.path for v in err.violations if v.rule == "IWC1-NO-BYTE-SHORT"] == ["b"]


@pytest.mark.spark
def test_a_table_of_another_profile_is_not_switched(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "w1"
    compat_write(spark.range(3), str(root), profile="writer-v1")
    err = refused(spark, root, "v3", CompatViolation).value
    # the upgrade would retire IcebergCompatV2 (ICV3-NO-OLDER-COMPAT), but not another profile's table
    assert err.rules == ["PROFILE-EXCLUSIVE"]


@pytest.mark.spark
def test_published_iceberg_metadata_blocks_a_new_table_state(
    spark: SparkSession, tables: Tables, tmp_path: Path
) -> None:
    root = tables.copy("id_mode", tmp_path / "published")
    upgrade_table(spark, root, "v3")  # in place: the col-<uuid> names stay
    write_iceberg_metadata(root)
    assert list((root / "metadata").glob("*.metadata.json"))
    err = refused(spark, root, "writer-v3", UpgradeRefused).value
    assert err.rules == ["UPGRADE-ICEBERG-READERS"]
    (v,) = err.violations
    assert "IWC1-PHYSICAL-NAME" in v.message and "name mapping" in v.message
    assert "icecompat iceberg" in v.fix


@pytest.mark.spark
def test_a_table_with_a_missing_data_file_is_not_touched(
    spark: SparkSession, tables: Tables, tmp_path: Path
) -> None:
    root = tables.copy("partial", tmp_path / "damaged")
    gone = sorted(a["path"] for a in support.live_adds(root))[0]
    support.data_file(root, {"path": gone}).unlink()
    err = refused(spark, root, "v3", UpgradeRefused).value
    assert err.rules == ["UPGRADE-UNREADABLE"]
    assert err.violations[0].observed == "missing_data_file" and gone in err.violations[0].message


@pytest.mark.spark
def test_no_table_and_unknown_profiles(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(TableReadError):
        upgrade_table(spark, tmp_path / "nothing", "v3")
    with pytest.raises(TableReadError):
        upgrade_table(None, tmp_path / "nothing", "v3", dry_run=True)
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(UnknownProfileError):
        upgrade_table(spark, tmp_path / "nothing", "v4")
