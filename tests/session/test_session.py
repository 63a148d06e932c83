"""The foundation: a real Spark + Delta session with the shim, and builder configuration rules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import types as T

import icecompat_writer
from icecompat_writer import sessions as session_mod
from icecompat_writer.errors import SessionConfigError, SetupError, SparkConnectNotSupported
from icecompat_writer.jvm import bridge


@pytest.mark.spark
def test_delta_round_trip_through_real_delta(spark: SparkSession, table_path: Path) -> None:
    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("part", T.StringType()),
            T.StructField("s", T.StructType([T.StructField("x", T.IntegerType())])),
        ]
    )
    rows = [(1, "a", (10,)), (2, "b", (20,)), (3, "a", None)]
    df = spark.createDataFrame(rows, schema)
    df.write.format("delta").partitionBy("part").save(str(table_path))

    commit = table_path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    adds = [a["add"] for a in actions if "add" in a]
    assert adds, "delta-spark wrote no AddFile"
    assert {a["partitionValues"]["part"] for a in adds} == {"a", "b"}
    back = spark.read.format("delta").load(str(table_path))
    assert_df_equality(back.select(*df.columns), df, ignore_row_order=True)


@pytest.mark.spark
def test_session_carries_shim_and_delta(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    assert session_mod.SHIM_JAR_NAME in conf.get("spark.jars")
    assert session_mod.DELTA_EXTENSION in conf.get("spark.sql.extensions")
    info = bridge.shim_info(spark)
    assert info["running_delta"] == info["built_for_delta"] == "4.4.0"
    assert info["running_spark"] == "4.2.0"
    assert conf.get("spark.master") == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"


@pytest.mark.spark
def test_session_returns_the_running_configured_session(spark: SparkSession) -> None:
    assert icecompat_writer.session() is spark


def test_configure_appends_to_user_jars_and_extensions(tmp_path: Path) -> None:
    user_jar = str(tmp_path / "team.jar")
    builder = SparkSession.Builder()
    builder.config("spark.jars", user_jar)
    builder.config("spark.sql.extensions", "com.example.TeamExtension")
    builder.config("spark.master", "local[1]")
    icecompat_writer.configure(builder)
    opts = builder._options
    jars = opts["spark.jars"].split(",")
    assert jars[0] == user_jar
    assert any(j.endswith(session_mod.SHIM_JAR_NAME) for j in jars)
    assert all(Path(j).is_absolute() for j in jars)
    assert opts["spark.sql.extensions"].split(",") == [
        "com.example.TeamExtension",
        session_mod.DELTA_EXTENSION,
        session_mod.GUARD_EXTENSION,
    ]
    assert opts["spark.master"] == "local[1]", "a user's own setting must win over lean defaults"
    # idempotent: configuring twice adds nothing twice
    icecompat_writer.configure(builder)
    assert builder._options["spark.jars"].split(",") == jars
    assert builder._options["spark.sql.extensions"].split(",") == [
        "com.example.TeamExtension",
        session_mod.DELTA_EXTENSION,
        session_mod.GUARD_EXTENSION,
    ]


def test_configure_keeps_users_catalog(tmp_path: Path) -> None:
    builder = SparkSession.Builder().config("spark.sql.catalog.spark_catalog", "com.example.Catalog")
    icecompat_writer.configure(builder)
    assert builder._options["spark.sql.catalog.spark_catalog"] == "com.example.Catalog"


def test_configure_refuses_spark_connect() -> None:
    builder = SparkSession.Builder().remote("sc://localhost:15002")
    with pytest.raises(SparkConnectNotSupported):
        icecompat_writer.configure(builder)


def test_missing_shim_jar_is_a_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(session_mod.JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(SetupError, match="bin/setup"):
        session_mod.runtime_jars()


def test_jars_do_not_duplicate_spark_jars() -> None:
    import pyspark

    spark_jars = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}

    def artifact(name: str) -> str:
        return name.rsplit("-", 1)[0]

    ours = {artifact(p.name) for p in session_mod.runtime_jars()}
    assert ours.isdisjoint({artifact(n) for n in spark_jars})


def test_refuses_a_running_session_without_the_jars(tmp_path: Path) -> None:
    """In a separate process: a plain session first, then icecompat_writer.session() must refuse."""
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        import icecompat_writer
        plain = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        try:
            icecompat_writer.session()
        except icecompat_writer.SessionConfigError as e:
            print("REFUSED:", e)
        else:
            print("ACCEPTED")
        plain.stop()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert "REFUSED:" in out.stdout, out.stdout + out.stderr
    assert "icecompat-shim.jar" in out.stdout
    assert issubclass(SessionConfigError, icecompat_writer.IcecompatError)
