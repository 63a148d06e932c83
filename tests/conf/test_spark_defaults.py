"""conf/spark-defaults.conf is usable as is, and never drifts from the jars the build produces."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from icecompat_writer.cli.main import main as cli_main
from icecompat_writer.sessions import spark_defaults

ROOT = Path(__file__).resolve().parents[2]


def test_committed_conf_matches_the_built_jars() -> None:
    committed = (ROOT / "conf" / "spark-defaults.conf").read_text()
    assert committed == spark_defaults(relative_to=ROOT), (
        "conf/spark-defaults.conf is stale: regenerate it with spark_defaults(relative_to=<project root>)"
    )


def test_cli_conf_prints_absolute_paths(tmp_path: Path) -> None:
    out = tmp_path / "spark-defaults.conf"
    assert cli_main(["conf", "-o", str(out)]) == 0
    jars_line = next(line for line in out.read_text().splitlines() if line.startswith("spark.jars"))
    jars = jars_line.split(None, 1)[1].split(",")
    assert jars and all(Path(j).is_absolute() and Path(j).is_file() for j in jars)


@pytest.mark.integration  # spark-submit in a child process
def test_spark_submit_with_the_committed_conf(tmp_path: Path) -> None:
    """A real spark-submit from the project root: Delta and the shim load from the conf alone."""
    job = tmp_path / "job.py"
    table = tmp_path / "t"
    job.write_text(
        textwrap.dedent(
            f"""
            from pyspark.sql import SparkSession
            spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
            jvm = spark._jvm
            loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
            jvm.java.lang.Class.forName("io.icecompat.shim.ShimInfo", True, loader)
            spark.range(5).write.format("delta").save({str(table)!r})
            print("ROWS", spark.read.format("delta").load({str(table)!r}).count())
            """
        )
    )
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYSPARK_PYTHON"] = sys.executable
    proc = subprocess.run(
        [str(bindir / "spark-submit"), "--properties-file", "conf/spark-defaults.conf", str(job)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ROWS 5" in proc.stdout
    assert (table / "_delta_log" / f"{0:020d}.json").is_file()
