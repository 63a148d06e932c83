"""A writer killed (SIGKILL) at a random point of a write: the table reads, checks clean, and the same
idempotent write re-run afterwards lands its rows exactly once.

The CI variant kills 3 writers; ``--soak`` kills 20.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icecompat_writer.checking.check import check_table
from icecompat_writer.writing.api import compat_write

ROWS = 500

CHILD = textwrap.dedent(
    """
    import sys
    import icecompat_writer
    from icecompat_writer.writing.api import compat_write
    table, version, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spark = icecompat_writer.session("crash-child", **{"spark.master": "local[1]"})
    df = spark.range(version * 100000, version * 100000 + rows)
    df = df.selectExpr("id", "cast(id % 7 as string) as part")
    print("WRITING", flush=True)
    compat_write(df, table, mode="append", options={"txnAppId": "crash-job", "txnVersion": str(version)})
    print("DONE", flush=True)
    """
)


def kill_during_write(table: Path, version: int, rng: random.Random) -> str:
    """Run one child write and SIGKILL it a random time after it starts writing; return its last word."""
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(table), str(version), str(ROWS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    said: list[str] = []
    writing = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            said.append(line.strip())
            if line.startswith("WRITING"):
                writing.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not writing.wait(timeout=300):
        proc.kill()
        raise AssertionError("the child writer never started writing")
    time.sleep(rng.uniform(0.0, 4.0))
    os.killpg(proc.pid, signal.SIGKILL)  # the Python driver and its JVM, at once
    proc.wait(timeout=60)
    reader.join(timeout=10)
    return said[-1] if said else ""


def crash_and_recover(spark: SparkSession, root: Path, kills: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    compat_write(
        spark.range(0).selectExpr("id", "cast(id as string) as part"), str(root), partition_by="part"
    )
    outcomes = {"killed before commit": 0, "finished before the kill": 0}
    for version in range(1, kills + 1):
        last = kill_during_write(root, version, rng)
        outcomes["finished before the kill" if last == "DONE" else "killed before commit"] += 1
        report = check_table(root, "v3")
        assert report.violations == () and report.findings == (), report.render_text()
        # the same idempotent write, re-run: its rows land once whether or not the killed one committed
        again = spark.range(version * 100000, version * 100000 + ROWS).selectExpr(
            "id", "cast(id % 7 as string) as part"
        )
        compat_write(
            again, str(root), mode="append", options={"txnAppId": "crash-job", "txnVersion": str(version)}
        )
        back = spark.read.format("delta").load(str(root))
        assert back.count() == version * ROWS, f"after kill {version}"
        assert back.select("id").distinct().count() == version * ROWS
    return outcomes


@pytest.mark.spark
def test_killed_writers_leave_a_readable_compliant_table(spark: SparkSession, tmp_path: Path) -> None:
    outcomes = crash_and_recover(spark, tmp_path / "t", kills=3, seed=7)
    assert sum(outcomes.values()) == 3


@pytest.mark.spark
@pytest.mark.soak
def test_soak_twenty_kills(spark: SparkSession, tmp_path: Path) -> None:
    outcomes = crash_and_recover(spark, tmp_path / "t", kills=20, seed=2026)
    assert sum(outcomes.values()) == 20
    print(f"SOAK kills=20 outcomes={outcomes}")
