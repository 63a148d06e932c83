"""``icecompat check|upgrade|iceberg --database`` over a Spark catalog database of 30 tables, and over
several paths.

One template table per kind is written through Spark (one commit each; two for the table with
deletion vectors and for the one the upgrade refuses): a compliant UniForm table (``v3``), compliant
``writer-v1`` and ``writer-v3`` tables, a plain Delta table, a table with deletion vectors (compliant
with ``v3``, refused by ``writer-v1``), a table ``writer-v1`` refuses for its types and features, and a
compliant table on S3 (the run's moto server). Three copies of each template (directories copied, or
objects copied within the bucket, Iceberg metadata left behind) are registered in the database with
``CREATE TABLE ... LOCATION`` (catalog metadata only), next to a Parquet table and a Delta table whose
files are gone (both ``error``, with their cause, while the others are judged). Every table's verdict
is asserted in the text, JSON and HTML outputs of every command; the check page is opened in headless
Chromium and every table is on it.
"""

from __future__ import annotations

import json
import re
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
from icecompat_writer.writing.api import compat_write
from tests.iceberg._support import normalise, spark_rows
from tests.objectstores import S3Server

pytestmark = pytest.mark.spark

V3 = "'delta.enableIcebergCompatV3' = 'true'"
SELECT = "SELECT id, CAST(id % 3 AS STRING) AS part, id * 2 AS v FROM range(0, 6)"
KINDS = ["bad", "dv", "good", "plain", "remote", "w1", "w3"]
COPIES = 3
# the profile ``check`` finds in each compliant kind
PROFILES = {"good": "v3", "dv": "v3", "remote": "v3", "w1": "writer-v1", "w3": "writer-v3"}
TABLES = sorted([*KINDS, *(f"{k}_{i}" for k in KINDS for i in range(1, COPIES + 1)), "gone", "pq"])
# the rules writer-v1 names for the table it refuses (a TINYINT column, the change data feed)
BAD_RULES = ["IWC1-NO-BYTE-SHORT", "IWC1-NO-CHANGE-DATA-FEED"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = icecompat_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _outcomes(out: str) -> dict[str, dict[str, Any]]:
    doc = json.loads(out)
    assert doc["format"] == "icecompat-fleet/1"
    assert doc["tables"] == len(doc["outcomes"])
    return {o["table"].removeprefix("fleet."): o for o in doc["outcomes"]}


def _text_verdicts(out: str) -> dict[str, str]:
    """``  fleet.NAME: VERDICT; ...`` lines of the text summary -> {NAME: verdict}."""
    lines = out.splitlines()
    assert lines[0].startswith("icecompat ") and f": {len(TABLES)} table(s): " in lines[0], lines[0]
    got = {}
    for line in lines[1:]:
        name, _, rest = line.strip().partition(": ")
        got[name.removeprefix("fleet.")] = rest.split(";")[0].lower()
    return got


def _html_verdicts(page: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-table="fleet\.([\w]+)" data-verdict="([^"]+)">', page))


def _expected(by_kind: dict[str, str], templates: dict[str, str] | None = None) -> dict[str, str]:
    """A verdict per table: its kind's (a copy's), the template's own where it differs, pq and gone errors."""
    want = {"pq": "error", "gone": "error"}
    for kind, verdict in by_kind.items():
        want[kind] = (templates or {}).get(kind, verdict)
        for i in range(1, COPIES + 1):
            want[f"{kind}_{i}"] = verdict
    return want


def _location(spark: SparkSession, name: str) -> str:
    return str(spark.sql(f"DESCRIBE DETAIL fleet.{name}").collect()[0]["location"])


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
        compat_write(spark.sql(SELECT), "fleet.w1", profile="writer-v1")
        compat_write(spark.sql(SELECT), "fleet.w3", profile="writer-v3")
        spark.sql(f"CREATE TABLE fleet.plain USING delta AS {SELECT}")
        spark.sql(
            f"CREATE TABLE fleet.dv USING delta TBLPROPERTIES ({V3}, "
            f"'delta.enableDeletionVectors' = 'true') AS {SELECT}"
        )
        spark.sql("DELETE FROM fleet.dv WHERE id = 1")
        spark.sql(
            "CREATE TABLE fleet.bad (id BIGINT, b TINYINT) USING delta TBLPROPERTIES "
            "('delta.columnMapping.mode' = 'id', 'delta.enableChangeDataFeed' = 'true')"
        )
        spark.sql("INSERT INTO fleet.bad VALUES (1, 1), (2, 2)")
        spark.sql(
            f"CREATE TABLE fleet.remote USING delta LOCATION 's3a://{bucket}/remote' "
            f"TBLPROPERTIES ({V3}) AS {SELECT}"
        )
        # the copies: the template's Delta log and data files, not its Iceberg metadata (whose
        # manifests name the template's files): each copy is converted by ``iceberg`` on its own
        client = s3a.client()
        keys = [
            obj["Key"]
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="remote/")
            for obj in page.get("Contents", [])
        ]
        assert keys and not any(k.startswith("remote/metadata/") for k in keys), keys
        for kind in KINDS:
            for i in range(1, COPIES + 1):
                name = f"{kind}_{i}"
                if kind == "remote":
                    for key in keys:
                        dest = f"{name}/{key.removeprefix('remote/')}"
                        client.copy_object(Bucket=bucket, Key=dest, CopySource={"Bucket": bucket, "Key": key})
                    location = f"s3a://{bucket}/{name}"
                else:
                    source = Path(_location(spark, kind).removeprefix("file:"))
                    location = str(base / "copies" / name)
                    shutil.copytree(source, location, ignore=shutil.ignore_patterns("metadata"))
                spark.sql(f"CREATE TABLE fleet.{name} USING delta LOCATION '{location}'")
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
    # iceberg: each Delta table registered under its Spark catalog name, the S3 ones through the
    # catalog's FileIO set from the session's fs.s3a.* keys; the plain and refused ones refused; the
    # others errors. Three tables at a time.
    pages = {cmd: tmp_path / f"{cmd}.html" for cmd in ("iceberg", "check", "upgrade")}
    code, out, _ = _run(
        capsys,
        "iceberg",
        "--database",
        "fleet",
        "--catalog",
        "fleetcat",
        "--json",
        "--parallel",
        "3",
        "--html",
        str(pages["iceberg"]),
    )
    got = _outcomes(out)
    assert sorted(got) == TABLES
    converted = set(PROFILES)
    want = _expected(
        {**{k: "converted" for k in converted}, "plain": "refused", "bad": "refused"},
        # kept current by the guard's sync after its CTAS (UniForm on); its copies have no metadata
        templates={"good": "current"},
    )
    assert {k: v["verdict"] for k, v in got.items()} == want, {k: v["error"] for k, v in got.items()}
    assert _html_verdicts(pages["iceberg"].read_text()) == want
    assert code == 2
    assert "not a Delta table (provider parquet)" in got["pq"]["error"]
    assert got["gone"]["error"].startswith("the Spark catalog cannot describe it (AnalysisException: ")
    assert str(fleet["base"] / "gone") in got["gone"]["error"]
    for name, outcome in got.items():
        if outcome["verdict"] == "refused":
            assert outcome["rules"], outcome
        if outcome["verdict"] in ("converted", "current"):
            assert outcome["catalog"]["identifier"] == f"fleet.{name}"
            assert outcome["catalog"]["action"] == "registered", outcome
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
    # every template and its last copy read back through Iceberg (the copies' metadata names their files)
    for kind in sorted(converted):
        for name in (kind, f"{kind}_{COPIES}"):
            table = catalog.load_table(f"fleet.{name}")
            assert normalise(table.scan().to_arrow()) == spark_rows(spark.table(f"fleet.{name}")), name
    for i in range(1, COPIES + 1):
        location = catalog.load_table(f"fleet.remote_{i}").metadata_location
        assert location.startswith(f"s3://{fleet['bucket']}/remote_{i}/metadata/"), location
    assert catalog.load_table("fleet.remote").metadata_location.startswith(f"s3://{fleet['bucket']}/remote/")
    # a second run, as text: nothing left to convert
    code, out, _ = _run(capsys, "iceberg", "--database", "fleet", "--catalog", "fleetcat")
    assert _text_verdicts(out) == {k: "current" if v == "converted" else v for k, v in want.items()}
    assert code == 2

    # check: one verdict per table, the Iceberg lag and the catalog's state; the HTML page too
    code, out, _ = _run(
        capsys,
        "check",
        "--database",
        "fleet",
        "--catalog",
        "fleetcat",
        "--json",
        "--html",
        str(pages["check"]),
    )
    got = _outcomes(out)
    want = _expected({**{k: "compliant" for k in converted}, "plain": "no profile", "bad": "no profile"})
    assert {k: v["verdict"] for k, v in got.items()} == want, {k: v["error"] for k, v in got.items()}
    assert _html_verdicts(pages["check"].read_text()) == want
    assert code == 2
    for kind, profile in PROFILES.items():
        for name in [kind] + [f"{kind}_{i}" for i in range(1, COPIES + 1)]:
            assert got[name]["profile"] == profile, got[name]
            assert got[name]["iceberg"]["lag"] == 0, got[name]
            assert got[name]["catalog"]["registered"] is True, got[name]
    for name in ["dv"] + [f"dv_{i}" for i in range(1, COPIES + 1)]:
        assert "deletion vector(s) read" in got[name]["detail"], got[name]
        assert got[name]["iceberg"] == {"converted_version": 1, "lag": 0}
    assert got["good"]["iceberg"] == {"converted_version": 0, "lag": 0}
    assert got["remote"]["catalog"]["registered"] is True and got["remote"]["catalog"]["delta_version"] == 0
    for name in ("plain", "bad"):
        assert got[name]["catalog"]["registered"] is False
        assert got[name]["detail"].startswith("closest profile"), got[name]
    code, out, _ = _run(capsys, "check", "--database", "fleet")
    assert (_text_verdicts(out), code) == (want, 2)

    # upgrade (dry run) to writer-v1: the tables with deletion vectors and the one with a TINYINT and
    # the change data feed are refused, naming their rules; the IcebergCompatV3 tables cannot go down
    # to writer-v1 (on IcebergCompatV2): refused, with rules
    code, out, _ = _run(
        capsys,
        "upgrade",
        "--database",
        "fleet",
        "--profile",
        "writer-v1",
        "--dry-run",
        "--json",
        "--html",
        str(pages["upgrade"]),
    )
    got = _outcomes(out)
    want = _expected(
        {
            "good": "refused",
            "remote": "refused",
            "dv": "refused",
            "bad": "refused",
            "w3": "refused",
            "plain": "would upgrade",
            "w1": "already compliant",
        }
    )
    assert {k: v["verdict"] for k, v in got.items()} == want, {k: v["error"] for k, v in got.items()}
    assert _html_verdicts(pages["upgrade"].read_text()) == want
    assert code == 2
    for i in ["", *(f"_{i}" for i in range(1, COPIES + 1))]:
        assert "ICV2-NO-DELETION-VECTORS" in got[f"dv{i}"]["rules"], got[f"dv{i}"]
        assert got[f"bad{i}"]["rules"] == BAD_RULES, got[f"bad{i}"]
        for kind in ("good", "remote", "w3"):
            assert got[f"{kind}{i}"]["rules"], got[f"{kind}{i}"]
    code, out, _ = _run(capsys, "upgrade", "--database", "fleet", "--profile", "writer-v1", "--dry-run")
    assert (_text_verdicts(out), code) == (want, 2)

    # the check page, as a browser renders it: every table in a row with its verdict
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
            pages["check"].as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert sorted(re.findall(r'data-table="fleet\.(\w+)"', dom)) == TABLES
    assert 'data-table="fleet.dv" data-verdict="compliant"' in dom
    assert 'data-table="fleet.pq" data-verdict="error"' in dom
    assert f"{len(TABLES)} table(s)" in dom


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
