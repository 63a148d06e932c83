"""Generated columns whose expression depends on the time of writing or is not deterministic, in tables
another generator wrote: the upgrade refuses them before any file is written (delta-spark would
re-check every rewritten row against the expression, or refuse the expression outright), naming the
rule, the column and the fix; the table is left byte for byte, files and directories.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from icecompat_writer.errors import CompatViolation, UpgradeRefused
from icecompat_writer.storage import io_for
from icecompat_writer.upgrading import plan_upgrade, upgrade_table
from icecompat_writer.upgrading.generated import volatile_function
from icecompat_writer.writing.api import compat_write
from tests import support
from tests.upgrading.foreign import generated_table

RULE = "UPGRADE-VOLATILE-GENERATED-COLUMN"


@pytest.mark.parametrize(
    ("expression", "found"),
    [
        ("CAST(now() AS DATE)", ("now()", "time")),
        ("current_timestamp()", ("current_timestamp()", "time")),
        ("CURRENT_DATE", ("current_date", "time")),
        ("date_add(CURRENT_DATE(), 1)", ("current_date()", "time")),
        ("unix_timestamp()", ("unix_timestamp()", "time")),
        ("rand() > 0.5", ("rand()", "random")),
        ("uuid()", ("uuid()", "random")),
        ("unix_timestamp(ts)", None),
        ("id * 2", None),
        ("concat('now()', `rand()`)", None),
        ("CAST(ts AS DATE)", None),
        ("a.now", None),
    ],
)
def test_which_expressions_depend_on_the_time_or_chance(
    expression: str, found: tuple[str, str] | None
) -> None:
    assert volatile_function(expression) == found


def test_a_bare_name_that_is_a_column_is_the_column() -> None:
    assert volatile_function("current_date", frozenset({"current_date"})) is None


@pytest.mark.parametrize(
    ("expression", "function", "delta_type", "arrow_type"),
    [
        ("CAST(now() AS DATE)", "now()", "date", pa.date32()),
        ("rand() > 0.5", "rand()", "boolean", pa.bool_()),
    ],
)
def test_the_plan_refuses_before_any_file(
    tmp_path: Path, expression: str, function: str, delta_type: str, arrow_type: pa.DataType
) -> None:
    values = [True, False, True] if delta_type == "boolean" else None
    root = generated_table(
        tmp_path / "t", expression, values=values, delta_type=delta_type, arrow_type=arrow_type
    )
    before = support.tree_state(root)
    with pytest.raises(UpgradeRefused) as info:
        plan_upgrade(root, "v3", io=io_for(root))
    assert type(info.value) is UpgradeRefused
    (v,) = info.value.violations
    assert (v.rule, v.path, v.observed) == (RULE, "g", expression)
    assert function in v.message and "plain column" in v.fix
    with pytest.raises(UpgradeRefused):
        upgrade_table(None, root, "v3", dry_run=True)
    assert support.tree_state(root) == before


def test_deterministic_or_unenforced_expressions_are_planned(tmp_path: Path) -> None:
    kept = generated_table(
        tmp_path / "det", "id * 2", values=[2, 4, 6], arrow_type=pa.int64(), delta_type="long"
    )
    assert [
        f.path for f in plan_upgrade(kept, "v3", io=io_for(kept)).rewrite
    ]  # rewritten for field ids, not refused
    # writer version 2: delta-spark ignores the expression, and so does the upgrade
    ignored = generated_table(
        tmp_path / "w2", "CAST(now() AS DATE)", protocol={"minReaderVersion": 1, "minWriterVersion": 2}
    )
    assert plan_upgrade(ignored, "v3", io=io_for(ignored)).needed


@pytest.mark.spark
def test_upgrade_of_a_time_dependent_column_leaves_the_table_as_it_was(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = generated_table(tmp_path / "now", "CAST(now() AS DATE)")
    before = support.tree_state(root)
    with pytest.raises(UpgradeRefused) as info:
        upgrade_table(spark, root, "v3")
    assert type(info.value) is UpgradeRefused
    assert info.value.rules == [RULE] and info.value.violations[0].path == "g"
    assert support.tree_state(root) == before


@pytest.mark.spark
def test_a_rewrite_delta_spark_fails_leaves_nothing_and_names_the_rule(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The other generator stored values its (deterministic) expression does not give: delta-spark
    refuses the first rewritten row after the file is open. The upgrade deletes what the attempt wrote
    (files and the directories made for them) and raises the rule, not a raw engine error; so does a
    compat_write of such a row."""
    root = generated_table(
        tmp_path / "wrong", "id * 2", values=[0, 0, 0], arrow_type=pa.int64(), delta_type="long"
    )
    before = support.tree_state(root)
    with pytest.raises(CompatViolation) as info:
        upgrade_table(spark, root, "v3")
    assert type(info.value) is CompatViolation
    (v,) = info.value.violations
    assert (v.rule, v.path) == ("DELTA-WRITE-ROW-CONSTRAINT", "g")
    assert "id * 2" in v.message and v.observed is not None and "g" in v.observed
    assert support.tree_state(root) == before

    rows = spark.createDataFrame([(7, 0)], "id long, g long")
    with pytest.raises(CompatViolation) as info:
        compat_write(rows, str(root), mode="append", profile="v3")
    assert type(info.value) is CompatViolation and info.value.rules == ["DELTA-WRITE-ROW-CONSTRAINT"]
    assert support.tree_state(root) == before
