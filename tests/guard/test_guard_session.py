"""A session configured for the guard without all of its pieces refuses guarded writes loudly, and
``icecompat doctor`` names what is missing. Each case needs its own JVM (static settings)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from icecompat_writer.sessions import DELTA_EXTENSION, GUARD_EXTENSION

# each test starts its own Spark in a child process
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_guarded_session_without_the_extension_refuses_the_first_guarded_write(tmp_path: Path) -> None:
    table = tmp_path / "t"
    proc = _run(
        f"""
        from pyspark.sql import SparkSession
        import icecompat_writer
        from icecompat_writer.jvm.bridge import translate_exception
        builder = icecompat_writer.configure(SparkSession.builder.master("local[1]"), guard=True)
        builder.config("spark.sql.extensions", {DELTA_EXTENSION!r})  # the guard's extension left out
        spark = builder.getOrCreate()
        spark.range(3).write.format("delta").save({str(tmp_path / "plain")!r})  # no profile: not guarded
        try:
            df = spark.range(3).write.format("delta").option("delta.enableIcebergCompatV3", "true")
            df.save({str(table)!r})
        except Exception as e:
            err = translate_exception(e)
            print("ERROR", type(err).__name__)
            print(str(err))
        """
    )
    assert "ERROR SessionConfigError" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert GUARD_EXTENSION in proc.stdout and "spark.sql.extensions" in proc.stdout
    assert (tmp_path / "plain" / "_delta_log").is_dir()
    assert not table.exists() or not any(table.rglob("*.parquet"))


def test_doctor_reads_a_properties_file_and_names_the_missing_extension(tmp_path: Path) -> None:
    good = (ROOT / "conf" / "spark-defaults.conf").read_text()
    broken = tmp_path / "broken.conf"
    broken.write_text(good.replace(f",{GUARD_EXTENSION}", ""))
    proc = _run(
        f"""
        from icecompat_writer.cli.main import main
        raise SystemExit(main(["doctor", "--properties-file", {str(broken)!r}]))
        """
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if "session guard" in x)
    assert line.startswith("BAD") and GUARD_EXTENSION in line
    assert any(x.startswith("ok   rule service") for x in proc.stdout.splitlines()), proc.stdout


def test_doctor_with_the_committed_conf_finds_everything() -> None:
    proc = _run(
        """
        from icecompat_writer.cli.main import main
        raise SystemExit(main(["doctor", "--properties-file", "conf/spark-defaults.conf"]))
        """
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert any(x.startswith("ok   session guard") and "complete" in x for x in proc.stdout.splitlines())
