"""The smoke set every supported Spark line runs (``bin/lines``: Spark 4.0 and 4.1 from the built wheel;
the normal suite: the development line). One table per step, each asserted from what landed: the log's
JSON, the checker's verdict, the rows Spark reads back, the Iceberg metadata.

Self-contained on purpose (only the package, pyspark and pytest): bin/lines copies this module out of the
source tree and runs it against the installed wheel with ``lines_conftest.py`` as its conftest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import icecompat_writer
from icecompat_writer import sessions
from icecompat_writer.checking.check import check_table
from icecompat_writer.cli.main import main as cli_main
from icecompat_writer.errors import CompatViolation, UnsupportedSparkVersion
from icecompat_writer.jvm import bridge
from icecompat_writer.upgrading import upgrade_table
from icecompat_writer.writing.api import compat_write

pytestmark = [pytest.mark.smoke, pytest.mark.spark]

DECLARING = {
    "v3": "delta.enableIcebergCompatV3",
    "writer-v1": "delta.enableIcebergWriterCompatV1",
    "writer-v3": "delta.enableIcebergWriterCompatV3",
}
ROWS = "id long, p string, s struct<a: long, tags: array<string>>, m map<string, int>"


def rows(spark: Any) -> Any:
    return spark.createDataFrame(
        [(1, "a", (10, ["x"]), {"k": 1}), (2, "b", (20, []), {}), (3, "a", (30, ["y", "z"]), {"q": 3})],
        ROWS,
    )


def metadata(root: Path) -> dict[str, Any]:
    """The newest metaData action of the table's log (read as JSON, not through the package)."""
    found: dict[str, Any] = {}
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                found = action["metaData"]
    return found


def ids(spark: Any, root: Path) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(str(root)).select("id").collect())


def test_the_session_runs_the_delta_jars_of_its_spark_line(spark: Any) -> None:
    line = sessions.spark_line(spark.version)
    assert line in sessions.supported_lines()
    ours = f"spark-{line}/delta-spark_{line}_2.13-4.4.0.jar"
    assert any(str(p).endswith(ours) for p in sessions.runtime_jars())
    assert ours in spark.sparkContext.getConf().get("spark.jars")
    info = bridge.shim_info(spark)
    assert (info["running_delta"], info["built_for_delta"]) == ("4.4.0", "4.4.0")


def test_an_unsupported_spark_is_refused_with_the_supported_lines(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """session() under a pyspark of a line without jars refuses before touching the running session."""
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "3.5.3")
    with pytest.raises(UnsupportedSparkVersion) as info:
        icecompat_writer.session("smoke-unsupported")
    assert info.value.supported == tuple(sessions.supported_lines())
    assert "Spark 3.5.3 is not supported" in str(info.value)
    assert all(f"{line}.x" in str(info.value) for line in sessions.supported_lines())
    monkeypatch.undo()
    assert spark.range(3).count() == 3  # the running session is untouched


@pytest.mark.parametrize("profile", list(DECLARING))
def test_compat_write_check_and_iceberg(spark: Any, tmp_path: Path, profile: str) -> None:
    root = tmp_path / profile
    compat_write(rows(spark), str(root), partition_by="p", profile=profile)
    expected = [1, 2, 3]
    if profile == "v3":  # an append through the held-open transaction on an existing table, once
        compat_write(rows(spark).selectExpr("id + 10 AS id", "p", "s", "m"), str(root), mode="append")
        expected += [11, 12, 13]
    assert metadata(root)["configuration"][DECLARING[profile]] == "true"
    assert ids(spark, root) == expected
    report = check_table(root, profile, files="all")
    assert report.compliant and not report.violations, report.render_text()
    assert cli_main(["check", str(root), "--profile", profile]) == 0
    assert cli_main(["iceberg", str(root)]) == 0
    hint = (root / "metadata" / "version-hint.text").read_text().strip()
    iceberg = json.loads(next((root / "metadata").glob(f"*{hint}*.metadata.json")).read_text())
    current = next(s for s in iceberg["snapshots"] if s["snapshot-id"] == iceberg["current-snapshot-id"])
    assert current["summary"]["total-records"] == str(len(expected))
    assert iceberg["format-version"] == (2 if profile == "writer-v1" else 3)


def test_guarded_sql_write_and_refusal(spark: Any, tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    spark.sql(
        f"CREATE TABLE delta.`{good}` USING delta TBLPROPERTIES ('{DECLARING['writer-v1']}' = 'true') AS "
        "SELECT id, named_struct('a', id) AS s FROM range(4)"
    )
    assert ids(spark, good) == [0, 1, 2, 3]
    assert check_table(good, "writer-v1", files="all").compliant
    with pytest.raises(Exception) as info:
        spark.sql(
            f"CREATE TABLE delta.`{bad}` USING delta TBLPROPERTIES ('{DECLARING['writer-v1']}' = 'true') "
            "AS SELECT id, CAST(id AS SMALLINT) AS small FROM range(4)"
        )
    err = bridge.translate_exception(info.value)
    assert type(err) is CompatViolation, f"{type(info.value).__name__}: {info.value}"
    assert [(v.rule, v.path) for v in err.violations if v.rule == "IWC1-NO-BYTE-SHORT"] == [
        ("IWC1-NO-BYTE-SHORT", "small")
    ]
    assert not (bad / "_delta_log").exists() or not any((bad / "_delta_log").glob("*.json"))


def test_upgrade_a_plain_delta_table(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    plain = spark.sql("SELECT id, named_struct('a', id) AS s FROM range(5)")
    plain.write.format("delta").save(str(root))  # declares no profile: the guard lets it through
    assert not check_table(root, "v3").compliant
    upgrade_table(spark, root, "v3")
    assert check_table(root, "v3", files="all").compliant
    assert ids(spark, root) == [0, 1, 2, 3, 4]
