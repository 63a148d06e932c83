"""Which Spark line's Delta jars a session gets, and what an unsupported Spark hears (no Spark started).

The folders are real: the installation's own icecompat_writer/jars (built by bin/setup), or a copy of
its layout under tmp_path for the cases the installation cannot show (a line without jars).
"""

from __future__ import annotations

import configparser
import re
import shutil
from pathlib import Path

import pyspark
import pytest

from icecompat_writer import sessions
from icecompat_writer.cli.main import main as cli_main
from icecompat_writer.errors import SetupError, UnsupportedSparkVersion

ROOT = Path(__file__).resolve().parents[2]
LINES = ["4.0", "4.1", "4.2"]


def test_the_build_ships_every_supported_line() -> None:
    assert sessions.supported_lines() == LINES
    for line in LINES:
        jars = [p.name for p in (sessions.jars_dir() / f"spark-{line}").glob("*.jar")]
        assert jars == [f"delta-spark_{line}_2.13-4.4.0.jar"]


@pytest.mark.parametrize(
    ("version", "line"),
    [("4.0.5", "4.0"), ("4.1.4", "4.1"), ("4.2.0", "4.2"), ("4.2.1", "4.2"), ("4.1.0-preview1", "4.1")],
)
def test_each_version_gets_its_lines_delta_jar_and_only_that(version: str, line: str) -> None:
    jars = sessions.runtime_jars(version)
    assert jars[0].name == sessions.SHIM_JAR_NAME
    deltas = [p for p in jars if p.name.startswith("delta-spark_")]
    assert deltas == [sessions.jars_dir() / f"spark-{line}" / f"delta-spark_{line}_2.13-4.4.0.jar"]
    assert {p.name for p in jars} >= {"delta-storage-4.4.0.jar", "delta-kernel-api-4.4.0.jar"}


def test_the_default_is_the_running_pyspark() -> None:
    line = sessions.spark_line(pyspark.__version__)
    assert sessions.line_jars_dir() == sessions.jars_dir() / f"spark-{line}"


@pytest.mark.parametrize("version", ["3.5.3", "4.3.0", "5.0.0"])
def test_an_unsupported_line_is_refused_naming_every_supported_one(version: str) -> None:
    with pytest.raises(UnsupportedSparkVersion) as info:
        sessions.runtime_jars(version)
    assert info.value.supported == tuple(LINES)
    assert info.value.version == version
    assert f"Spark {version} is not supported" in str(info.value)
    assert "supported Spark lines: 4.0.x, 4.1.x, 4.2.x" in str(info.value)
    assert isinstance(info.value, SetupError)


@pytest.mark.parametrize("text", ["", "four", "4", "v4.1.0"])
def test_a_string_that_is_no_version_is_refused(text: str) -> None:
    with pytest.raises(UnsupportedSparkVersion, match="not a Spark version string"):
        sessions.spark_line(text)


def test_a_build_without_a_lines_jar_does_not_offer_that_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "jars"
    shutil.copytree(sessions.jars_dir(), copy)
    shutil.rmtree(copy / "spark-4.1")
    (copy / "spark-4.0" / "delta-spark_4.0_2.13-4.4.0.jar").unlink()  # folder left, jar gone
    monkeypatch.setenv(sessions.JARS_DIR_ENV, str(copy))
    assert sessions.supported_lines() == ["4.2"]
    with pytest.raises(UnsupportedSparkVersion, match=r"supported Spark lines: 4\.2\.x \("):
        sessions.runtime_jars("4.1.4")


def test_conf_renders_another_line_and_the_maven_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["conf", "--spark-version", "4.0.5", "--packages"]) == 0
    text = capsys.readouterr().out
    settings = dict(
        line.split(None, 1) for line in text.splitlines() if line.strip() and not line.startswith("#")
    )
    assert settings["spark.jars.packages"] == "io.delta:delta-spark_4.0_2.13:4.4.0"
    assert settings["spark.jars"] == str(sessions.jars_dir() / sessions.SHIM_JAR_NAME)
    assert "For Spark 4.0.x" in text

    assert cli_main(["conf", "--spark-version", "4.1.4", "--submit"]) == 0
    submit = capsys.readouterr().out
    jars = re.search(r"--jars (\S+)", submit)
    assert jars is not None
    assert [Path(j).name for j in jars.group(1).split(",") if "delta-spark_" in j] == [
        "delta-spark_4.1_2.13-4.4.0.jar"
    ]
    assert "--conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension," in submit
    assert submit.rstrip().endswith("your_job.py")


def test_conf_for_an_unsupported_spark_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["conf", "--spark-version", "3.5.1"]) == 2
    err = capsys.readouterr().err
    assert "Spark 3.5.1 is not supported" in err and "4.0.x, 4.1.x, 4.2.x" in err


def test_runtime_requirements_are_ranges_and_the_pins_live_in_constraints() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    requires = [r.strip() for r in cfg["options"]["install_requires"].splitlines() if r.strip()]
    assert "pyspark>=4.0,<4.3" in requires
    assert not any("==" in r for r in requires)
    assert not any(r.startswith("delta-spark") for r in requires)  # the runtime never imports `delta`
    pinned = {
        line.split("==")[0].split("[")[0]
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    named = {
        re.split(r"[<>=\[ ]", r.strip())[0]
        for key in cfg["options.extras_require"]
        for r in cfg["options.extras_require"][key].splitlines()
        if r.strip()
    } | {re.split(r"[<>=\[ ]", r)[0] for r in requires}
    assert named <= pinned, f"not pinned in constraints.txt: {sorted(named - pinned)}"
    assert "pyspark" in pinned and "delta-spark" in pinned
