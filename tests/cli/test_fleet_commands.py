"""``icecompat check|upgrade|iceberg --database`` over a Spark catalog database, and over several paths.

The database holds one table per verdict, made as cheaply as Spark allows (one commit each, two for
the table with deletion vectors): a compliant UniForm table, a plain Delta table, a table with deletion
vectors (compliant with ``v3``, refused by ``writer-v1``), a compliant table on S3 (the run's moto
server), a Parquet table and a Delta table whose files are gone (both ``error``, with their cause,
while the others are judged). The HTML page is opened in headless Chromium and every table is on it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog import load_catalog
from pyspark.sql import SparkSession

from icecompat_writer import storage
from icecompat_writer.cli.main import main as icecompat_main
from tests.iceberg._support import normalise, spark_rows
from tests.objectstores import S3Server

pytestmark = pytest.mark.spark

V3 = "'delta.enableIcebergCompatV3' = 'true'"
SELECT = "SELECT id, CAST(id % 3 AS STRING) AS part, id * 2 AS v FROM range(0, 6)"
TABLES = ["dv", "gone", "good", "plain", "pq", "remote"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = icecompat_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _outcomes(out: str) -> dict[str, dict[str, Any]]:
    doc = json.loads(out)
    assert doc["format"] == "icecompat-fleet/1"
    return {o["table"].removeprefix("fleet."): o for o in doc["outcomes"]}


@pytest.fixture(scope="module")
def fleet(
    spark: SparkSession, s3a: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("fleet")
    bucket = s3a.new_bucket("fleet")
    spark.sql(f"CREATE DATABASE fleet LOCATION '{base / 'db'}'")
    try:
        spark.sql(
            f"CREATE TABLE fleet.good USING delta TBLPROPERTIES ({V3}, "
            f"'delta.universalFormat.enabledFormats' = 'iceberg') AS {SELECT}"
        )
        spark.sql(f"CREATE TABLE fleet.plain USING delta AS {SELECT}")
        spark.sql(
            f"CREATE TABLE fleet.dv USING delta TBLPROPERTIES ({V3}, "
            f"'delta.enableDeletionVectors' = 'true') AS {SELECT}"
        )
        spark.sql("DELETE FROM fleet.dv WHERE id = 1")
        spark.sql(
            f"CREATE TABLE fleet.remote USING delta LOCATION 's3a://{bucket}/remote' "
            f"TBLPROPERTIES ({V3}) AS {SELECT}"
        )
        spark.sql(f"CREATE TABLE fleet.pq USING parquet AS {SELECT}")
        gone = base / "gone"
        spark.sql(f"CREATE TABLE fleet.gone (id BIGINT) USING delta LOCATION '{gone}'")
        shutil.rmtree(gone)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PYICEBERG_CATALOG__FLEETCAT__TYPE", "sql")
            mp.setenv("PYICEBERG_CATALOG__FLEETCAT__URI", f"sqlite:///{base / 'catalog.db'}")
            storage.clear_cache()
            yield {"base": base, "bucket": bucket, "catalog_db": base / "catalog.db"}
    finally:
        spark.sql("DROP DATABASE IF EXISTS fleet CASCADE")
        storage.clear_cache()


def test_iceberg_check_and_upgrade_over_a_database(
    spark: SparkSession,
    fleet: dict[str, Any],
    s3_server: S3Server,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # iceberg: each Delta table registered under its Spark catalog name, the S3 one through the
    # catalog's FileIO set from the session's fs.s3a.* keys; the plain one refused; the others errors
    code, out, _ = _run(capsys, "iceberg", "--database", "fleet", "--catalog", "fleetcat", "--json")
    got = _outcomes(out)
    assert sorted(got) == TABLES
    assert {k: v["verdict"] for k, v in got.items()} == {
        "good": "current",  # kept current by the guard's sync after its CTAS
        "dv": "converted",
        "remote": "converted",
        "plain": "refused",
        "pq": "error",
        "gone": "error",
    }, {k: v["error"] for k, v in got.items()}
    assert code == 2
    assert "not a Delta table (provider parquet)" in got["pq"]["error"]
    assert got["gone"]["error"].startswith("the Spark catalog cannot describe it (AnalysisException: ")
    assert str(fleet["base"] / "gone") in got["gone"]["error"]
    assert got["plain"]["rules"], got["plain"]
    for name in ("good", "dv", "remote"):
        assert got[name]["catalog"]["identifier"] == f"fleet.{name}"
        assert got[name]["catalog"]["action"] == "registered"
    catalog = load_catalog(
        "fleetcat",
        type="sql",
        uri=f"sqlite:///{fleet['catalog_db']}",
        **{
            "s3.endpoint": s3_server.endpoint,
            "s3.access-key-id": s3_server.access_key,
            "s3.secret-access-key": s3_server.secret_key,
            "s3.region": s3_server.region,
        },
    )
    for name in ("good", "dv", "remote"):
        table = catalog.load_table(f"fleet.{name}")
        assert normalise(table.scan().to_arrow()) == spark_rows(spark.table(f"fleet.{name}")), name
    assert catalog.load_table("fleet.remote").metadata_location.startswith(f"s3://{fleet['bucket']}/remote/")

    # check: one verdict per table, the Iceberg lag and the catalog's state; the HTML page too
    page = tmp_path / "fleet.html"
    code, out, _ = _run(
        capsys, "check", "--database", "fleet", "--catalog", "fleetcat", "--json", "--html", str(page)
    )
    got = _outcomes(out)
    assert {k: v["verdict"] for k, v in got.items()} == {
        "good": "compliant",
        "dv": "compliant",
        "remote": "compliant",
        "plain": "no profile",
        "pq": "error",
        "gone": "error",
    }, {k: v["error"] for k, v in got.items()}
    assert code == 2
    assert "deletion vector(s) read" in got["dv"]["detail"]
    assert got["good"]["iceberg"] == {"converted_version": 0, "lag": 0}
    assert got["dv"]["iceberg"] == {"converted_version": 1, "lag": 0}
    assert got["remote"]["catalog"]["registered"] is True and got["remote"]["catalog"]["delta_version"] == 0
    assert got["plain"]["catalog"]["registered"] is False
    assert got["plain"]["detail"].startswith("closest profile")

    # upgrade (dry run) to writer-v1: the table with deletion vectors is refused, naming the rule
    code, out, _ = _run(
        capsys, "upgrade", "--database", "fleet", "--profile", "writer-v1", "--dry-run", "--json"
    )
    got = _outcomes(out)
    assert got["dv"]["verdict"] == "refused" and "ICV2-NO-DELETION-VECTORS" in got["dv"]["rules"]
    assert got["plain"]["verdict"] == "would upgrade", got["plain"]
    # the IcebergCompatV3 tables cannot go down to writer-v1 (on IcebergCompatV2): refused, with rules
    for name in ("good", "remote"):
        assert got[name]["verdict"] == "refused" and got[name]["rules"], got[name]
    assert (got["pq"]["verdict"], got["gone"]["verdict"], code) == ("error", "error", 2)

    # the page, as a browser renders it: every table in a row with its verdict
    chromium = shutil.which("chromium")
    assert chromium is not None, "headless Chromium is missing: bin/setup installs Debian's chromium"
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    for name in TABLES:
        assert f'data-table="fleet.{name}"' in dom, name
    assert 'data-table="fleet.dv" data-verdict="compliant"' in dom
    assert 'data-table="fleet.pq" data-verdict="error"' in dom
    assert "6 table(s)" in dom


def test_several_paths_one_summary(
    spark: SparkSession, fleet: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Paths instead of a database: the same run, each table named by its path; a missing path is an
    error outcome, not a crash."""
    good = spark.sql("DESCRIBE DETAIL fleet.good").collect()[0]["location"]
    missing = str(fleet["base"] / "nowhere")
    code, out, _ = _run(capsys, "check", good, missing, "--parallel", "2")
    assert code == 2
    lines = out.splitlines()
    assert lines[0].startswith("icecompat check over 2 path(s): 2 table(s): 1 compliant, 1 error")
    assert lines[1].startswith(f"  {good}: COMPLIANT; profile v3")
    assert lines[2].startswith(f"  {missing}: ERROR") and "TableReadError" in lines[2]
    code, _, err = _run(capsys, "check", "--database", "fleet", good)
    assert code == 2 and "not both" in err


def test_a_table_written_through_its_catalog_name_is_registered_under_it(
    spark: SparkSession, fleet: dict[str, Any]
) -> None:
    """compat_write to ``fleet.named`` with a catalog but no identifier property: Iceberg's identifier
    is the Spark catalog's name; the namespace is created on the way."""
    from icecompat_writer.writing.api import compat_write

    frame = spark.range(0, 3).selectExpr("id", "id * 2 AS v")
    props = {"delta.universalFormat.enabledFormats": "iceberg", "icecompat.iceberg.catalog": "fleetcat"}
    result = compat_write(frame, "fleet.named", properties=props)
    assert result.iceberg is not None and result.iceberg.error is None, result.iceberg
    assert result.iceberg.catalog is not None
    assert (result.iceberg.catalog.identifier, result.iceberg.catalog.action) == ("fleet.named", "registered")
    table = load_catalog("fleetcat", type="sql", uri=f"sqlite:///{fleet['catalog_db']}").load_table(
        "fleet.named"
    )
    assert normalise(table.scan().to_arrow()) == spark_rows(spark.table("fleet.named"))
