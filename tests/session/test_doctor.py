"""`icecompat doctor` says what is there and what is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from icecompat_writer.cli.doctor import doctor_report
from icecompat_writer.cli.main import main


def test_doctor_names_a_missing_jar_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("ICECOMPAT_JARS_DIR", str(tmp_path))
    assert main(["doctor", "--no-spark"]) == 1
    out = capsys.readouterr().out
    assert "BAD  runtime jars" in out and "bin/setup" in out
    assert "BAD  driver agent" in out


@pytest.mark.integration  # Spark in a child process
def test_doctor_in_a_real_session() -> None:
    """In its own process (it starts and stops a session): everything is found and loaded."""
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "icecompat_writer.cli.main", "doctor"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "ok   writer-compat features" in proc.stdout
    assert "delta-spark 4.4.0" in proc.stdout


def test_doctor_report_without_spark_is_all_ok() -> None:
    rows = doctor_report(start_spark=False)
    assert [w for w, ok, _ in rows if not ok] == []
