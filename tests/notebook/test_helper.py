"""The notebook helper without a kernel: session requirements, the refusal text, write routing, views.

Routing is tested against a stand-in for the JVM side of pyspark's writers (every builder call and
write is recorded) and a recording ``compat_write``: which writes reach the compat path, with which
arguments, and that everything else reaches Spark's writer exactly as pyspark sends it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from icecompat_writer import sessions
from icecompat_writer.errors import CompatViolation, IcecompatError, SessionConfigError, Violation
from icecompat_writer.notebook import NotebookStatus, display
from icecompat_writer.notebook.requirements import check_conf, explain_missing
from icecompat_writer.notebook.writers import RoutingDataFrameWriter, RoutingDataFrameWriterV2

GOOD_CONF = {
    "spark.jars": f"/opt/x/team.jar,/opt/ice/jars/{sessions.SHIM_JAR_NAME},/opt/ice/jars/delta-spark.jar",
    "spark.sql.extensions": f"com.example.Ext,{sessions.DELTA_EXTENSION}",
    "spark.driver.extraJavaOptions": f"-Xss4m -javaagent:/opt/ice/jars/{sessions.AGENT_JAR_NAME}",
    "spark.sql.catalog.spark_catalog": sessions.DELTA_CATALOG,
}


# -- what a running session needs ---------------------------------------------------------------------
def test_a_configured_session_meets_every_requirement() -> None:
    for profile in ("v3", "writer-v1", "writer-v3"):
        assert all(r.ok for r in check_conf(GOOD_CONF, profile))


def test_missing_jars_and_extension_are_fatal_and_the_agent_only_for_writer_profiles() -> None:
    plain = {"spark.master": "local[1]"}
    failed = {r.setting for r in check_conf(plain, "v3") if r.required and not r.ok}
    assert failed == {"spark.jars", "spark.sql.extensions"}
    failed = {r.setting for r in check_conf(plain, "writer-v1") if r.required and not r.ok}
    assert failed == {"spark.jars", "spark.sql.extensions", "spark.driver.extraJavaOptions"}
    no_agent = {**GOOD_CONF, "spark.driver.extraJavaOptions": "-Xss4m"}
    assert all(r.ok or not r.required for r in check_conf(no_agent, "v3"))
    assert [r.setting for r in check_conf(no_agent, "writer-v3") if not r.ok] == [
        "spark.driver.extraJavaOptions"
    ]
    # a jar whose name merely contains the shim's name is not the shim
    lookalike = {**GOOD_CONF, "spark.jars": f"/opt/old-{sessions.SHIM_JAR_NAME}.bak"}
    assert not check_conf(lookalike, "v3")[0].ok


def test_the_refusal_says_why_and_what_to_do() -> None:
    missing = [r for r in check_conf({"spark.jars": "/opt/team.jar"}, "writer-v1") if not r.ok and r.required]
    text = explain_missing(missing, notebook=True)
    assert sessions.SHIM_JAR_NAME in text and "/opt/team.jar" in text
    assert sessions.DELTA_EXTENSION in text and sessions.AGENT_JAR_NAME in text
    assert "static settings" in text and "when the driver JVM starts" in text
    assert "Restart the kernel" in text and "%load_ext icecompat_writer" in text
    assert "icecompat_writer.configure(SparkSession.builder).getOrCreate()" in text
    assert "`icecompat conf`" in text
    plain = explain_missing(missing, notebook=False)
    assert "new Python process" in plain and "icecompat_writer.notebook.enable()" in plain


@pytest.mark.integration  # Spark in a child process
def test_enable_on_a_running_session_without_the_jars_explains_and_changes_nothing(tmp_path: Path) -> None:
    """In its own process: a plain pyspark session first, then enable()."""
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        from pyspark.sql.readwriter import DataFrameWriter
        from icecompat_writer.errors import SessionConfigError
        from icecompat_writer.notebook import enable, status
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "1").getOrCreate())
        try:
            enable()
        except SessionConfigError as err:
            print("REFUSED", type(err).__name__)
            print(err)
        else:
            print("ACCEPTED")
        print("WRITER", type(spark.range(1).write) is DataFrameWriter, status().enabled)
        spark.stop()
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert "REFUSED SessionConfigError" in out.stdout, out.stdout + out.stderr[-3000:]
    assert f"spark.jars lacks {sessions.SHIM_JAR_NAME}" in out.stdout
    assert f"spark.sql.extensions lacks {sessions.DELTA_EXTENSION}" in out.stdout
    assert "static settings" in out.stdout and "Start a new Python process" in out.stdout
    assert "WRITER True False" in out.stdout, "a refused enable() must leave df.write alone"
    assert issubclass(SessionConfigError, IcecompatError)


# -- routing ------------------------------------------------------------------------------------------
class FakeJava:
    """Stands in for the JVM writer: records each call, returns itself like the builder does."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> FakeJava:
            self.calls.append((name, *args))
            return self

        return call


class FakeSpark:
    def __init__(self, default: str = "parquet", tables: dict[str, str] | None = None) -> None:
        self._conf = {"spark.sql.sources.default": default}
        self.tables = tables or {}
        self.conf = SimpleNamespace(get=lambda key, default=None: self._conf.get(key, default))
        # the helper asks with backtick-quoted identifiers, as Spark's parser takes them
        self.catalog = SimpleNamespace(tableExists=lambda name: name.strip("`") in self.tables)
        self._sc = SimpleNamespace(_jvm=SimpleNamespace(PythonUtils=SimpleNamespace(toSeq=list)))

    def sql(self, query: str) -> Any:
        name = query.rsplit(" ", 1)[-1].strip("`")
        rows = [("col", "bigint", None), ("Provider", self.tables[name], "")]
        return SimpleNamespace(collect=lambda: rows)


@pytest.fixture
def compat_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import icecompat_writer.writing.api as api
    import icecompat_writer.writing.wrappers as wrappers

    calls: list[dict[str, Any]] = []

    def recording(df: Any, target: Any, **kwargs: Any) -> str:
        calls.append({"df": df, "target": target, **kwargs})
        return "RESULT"

    monkeypatch.setattr(api, "compat_write", recording)
    monkeypatch.setattr(wrappers, "compat_write", recording)  # the wrappers hold the name they imported
    return calls


def frame(spark: FakeSpark) -> tuple[Any, FakeJava]:
    java = FakeJava()
    df = SimpleNamespace(sparkSession=spark, _jdf=SimpleNamespace(write=lambda: java, writeTo=lambda t: java))
    return df, java


def test_a_delta_save_goes_through_compat_write(compat_calls: list[dict[str, Any]]) -> None:
    df, java = frame(FakeSpark())
    writer = RoutingDataFrameWriter(df, "writer-v1")
    got = (
        writer.mode("append")
        .option("mergeSchema", True)
        .options(userMetadata="nightly", compression=None)
        .partitionBy("part")
        .format("delta")
        .save("/data/t")
    )
    assert got == "RESULT"
    [call] = compat_calls
    assert call["df"] is df and call["target"] == "/data/t"
    assert call["mode"] == "append" and call["profile"] == "writer-v1"
    assert call["partition_by"] == ["part"]
    assert call["options"] == {"mergeSchema": "true", "userMetadata": "nightly"}
    # Spark's writer saw the builder calls, but never wrote
    assert ("format", "delta") in java.calls and not any(c[0] == "save" for c in java.calls)


def test_other_formats_are_sparks_own_writes(compat_calls: list[dict[str, Any]]) -> None:
    df, java = frame(FakeSpark())
    assert RoutingDataFrameWriter(df, "v3").format("parquet").mode("overwrite").save("/data/p") is None
    assert java.calls[-1] == ("save", "/data/p")
    df, java = frame(FakeSpark())
    RoutingDataFrameWriter(df, "v3").mode("overwrite").parquet("/data/p2")
    assert java.calls[-1] == ("parquet", "/data/p2")
    df, java = frame(FakeSpark())
    RoutingDataFrameWriter(df, "v3").save("/data/default")  # spark.sql.sources.default = parquet
    assert java.calls == [("save", "/data/default")]
    assert compat_calls == []


def test_delta_as_default_source_and_format_given_to_save(compat_calls: list[dict[str, Any]]) -> None:
    df, _ = frame(FakeSpark(default="delta"))
    RoutingDataFrameWriter(df, "v3").save("/data/a")
    df, _ = frame(FakeSpark())
    RoutingDataFrameWriter(df, "v3").save("/data/b", format="DELTA", mode="overwrite", partitionBy="p")
    assert [(c["target"], c["mode"], c["partition_by"]) for c in compat_calls] == [
        ("/data/a", "errorifexists", None),
        ("/data/b", "overwrite", ["p"]),
    ]


def test_tables_follow_sparks_format_rules(compat_calls: list[dict[str, Any]]) -> None:
    spark = FakeSpark(tables={"orders": "delta", "logs": "parquet"})
    # append without a format: the existing table's provider decides
    df, _ = frame(spark)
    RoutingDataFrameWriter(df, "v3").mode("append").saveAsTable("orders")
    df, java = frame(spark)
    RoutingDataFrameWriter(df, "v3").mode("append").saveAsTable("logs")
    assert java.calls[-1] == ("saveAsTable", "logs")
    # insertInto: by position into the table, overwrite from the argument or the mode
    df, _ = frame(spark)
    RoutingDataFrameWriter(df, "v3").insertInto("orders")
    df, _ = frame(spark)
    RoutingDataFrameWriter(df, "v3").mode("overwrite").insertInto("orders")
    df, java = frame(spark)
    RoutingDataFrameWriter(df, "v3").insertInto("logs", overwrite=True)
    assert java.calls[-1] == ("insertInto", "logs")
    assert [(c["target"], c["mode"], c.get("by_position", False)) for c in compat_calls] == [
        ("orders", "append", False),
        ("orders", "append", True),
        ("orders", "overwrite", True),
    ]


def test_bucketing_a_delta_write_is_refused_before_anything_is_written(
    compat_calls: list[dict[str, Any]],
) -> None:
    df, java = frame(FakeSpark())
    with pytest.raises(IcecompatError, match="bucketBy"):
        RoutingDataFrameWriter(df, "v3").bucketBy(4, "id").format("delta").saveAsTable("t")
    assert compat_calls == [] and not any(c[0] == "saveAsTable" for c in java.calls)


def test_writeto_routes_delta_tables(compat_calls: list[dict[str, Any]]) -> None:
    spark = FakeSpark(tables={"orders": "delta", "logs": "parquet"})
    df, _ = frame(spark)
    RoutingDataFrameWriterV2(df, "fresh", "writer-v3").using("delta").tableProperty(
        "delta.appendOnly", "false"
    ).option("mergeSchema", "true").createOrReplace()
    df, _ = frame(spark)
    RoutingDataFrameWriterV2(df, "orders", "v3").append()
    df, java = frame(spark)
    RoutingDataFrameWriterV2(df, "logs", "v3").append()
    assert java.calls[-1] == ("append",)
    df, java = frame(spark)
    RoutingDataFrameWriterV2(df, "other", "v3").create()  # no provider: the default source, parquet
    assert java.calls[-1] == ("create",)
    assert [(c["target"], c["mode"], c["profile"]) for c in compat_calls] == [
        ("fresh", "create_or_replace", "writer-v3"),
        ("orders", "append_existing", "v3"),
    ]
    assert compat_calls[0]["properties"] == {"delta.appendOnly": "false"}
    df, _ = frame(spark)
    with pytest.raises(IcecompatError, match="replaceWhere"):
        RoutingDataFrameWriterV2(df, "orders", "v3").overwrite("id > 1")


# -- views --------------------------------------------------------------------------------------------
def test_html_views_escape_and_name_the_rule() -> None:
    v = Violation("v3", "ICV3-TYPE-ALLOWLIST", "a<b>", "type void is not allowed", "cast it", "void", "x")
    page = display.compat_violation_html(CompatViolation([v], "(planning t)"))
    assert "ICV3-TYPE-ALLOWLIST" in page and "a&lt;b&gt;" in page and "<b>" not in page.split("a&lt;")[1]
    result = SimpleNamespace(
        target="t<1>",
        location="/x/t",
        profile="v3",
        mode="append",
        version=3,
        files=("a", "b"),
        rows=10,
        changes=(),
        skipped=None,
        attempts=1,
        removed_files=0,
    )
    page = display.write_result_html(result)
    assert "version <b>3</b>" in page and "t&lt;1&gt;" in page and "2 file(s), 10 row(s)" in page
    skipped = SimpleNamespace(target="t", profile="v3", mode="ignore", version=None, skipped="exists")
    assert "nothing written" in display.write_result_html(skipped)


def test_status_text_and_html() -> None:
    off = NotebookStatus(enabled=False)
    assert "not enabled" in str(off) and "not enabled" in off._repr_html_()
    on = NotebookStatus(
        enabled=True,
        profile="writer-v1",
        master="local[2]",
        app_name="nb",
        spark_version="4.2.0",
        requirements=tuple(check_conf(GOOD_CONF, "writer-v1")),
    )
    assert "profile writer-v1" in str(on) and "ok  spark.jars" in str(on)
    assert "<b>writer-v1</b>" in on._repr_html_()
