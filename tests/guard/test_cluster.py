"""A real distributed run: a standalone master and two workers on 127.0.0.1, a spark-submit job that
writes with plain ``df.write.format("delta")``, configured only by ``conf/spark-defaults.conf``, then
checks the table with its footers read on the workers' executors (one driver start for both)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyspark
import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.jvm.footers import JOB_GROUP
from tests.support import latest

# a standalone cluster and spark-submit in child processes
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SPARK_HOME = Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_RUNNING: list[subprocess.Popen[bytes]] = []


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in _RUNNING):
            raise AssertionError(f"a cluster process exited while waiting for {what}")
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` with two one-core workers, started from pyspark's spark-class."""
    base = tmp_path_factory.mktemp("cluster")
    port, ui = _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_HOME": str(SPARK_HOME),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    procs: list[subprocess.Popen[bytes]] = []
    spark_class = str(SPARK_HOME / "bin" / "spark-class")

    def start(args: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(base / log, "wb")
        proc = subprocess.Popen([spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT)
        procs.append(proc)
        _RUNNING.append(proc)
        return proc

    try:
        start(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            "master.log",
        )
        master = f"spark://127.0.0.1:{port}"
        _wait_for(
            lambda: "I have been elected leader" in (base / "master.log").read_text(errors="replace"),
            120,
            "the master",
        )
        for i in range(2):
            start(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(base / f"work{i}"),
                    master,
                ],
                f"worker{i}.log",
            )
        _wait_for(
            lambda: all(
                "Successfully registered with master" in (base / f"worker{i}.log").read_text(errors="replace")
                for i in range(2)
            ),
            120,
            "two workers",
        )
        yield master
    finally:
        _RUNNING.clear()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_spark_submit_on_a_standalone_cluster_writes_a_compliant_table(cluster: str, tmp_path: Path) -> None:
    table = tmp_path / "orders"
    events = tmp_path / "events"
    events.mkdir()
    job = tmp_path / "job.py"
    job.write_text(
        textwrap.dedent(
            f"""
            from pyspark.sql import SparkSession
            spark = SparkSession.builder.getOrCreate()
            df = spark.range(0, 2000, 1, 8).selectExpr(
                "id", "CAST(id % 4 AS STRING) AS region",
                "named_struct('qty', id % 7, 'tags', array(CAST(id AS STRING))) AS detail")
            df.write.format("delta").partitionBy("region").save({str(table)!r})
            print("ROWS", spark.read.format("delta").load({str(table)!r}).count())

            from icecompat_writer.checking.check import check_table
            from icecompat_writer.deltalog import read_snapshot
            from icecompat_writer.evidence.file_reads import read_in_threads
            from icecompat_writer.evidence.live_files import snapshot_facts
            from icecompat_writer.jvm.footers import ExecutorFooterReader
            from icecompat_writer.storage import io_for
            reader = ExecutorFooterReader(spark, "true")
            snap = read_snapshot({str(table)!r}, io=io_for({str(table)!r}))
            there = snapshot_facts(snap, reader=reader)
            here = snapshot_facts(snap, reader=read_in_threads)
            report = check_table({str(table)!r}, footer_reader=reader)
            print("FOOTERS", there == here, there.files_read == len(snap.add_files), reader.tasks)
            print("CHECK", report.compliant, report == check_table({str(table)!r}))
            spark.stop()
            """
        )
    )
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": str(ROOT),  # the driver imports this checkout's package (the job is elsewhere)
    }
    proc = subprocess.run(
        [
            str(BIN / "spark-submit"),
            "--master",
            cluster,
            "--properties-file",
            "conf/spark-defaults.conf",
            "--conf",
            "spark.icecompat.profile=writer-v1",
            "--conf",
            f"spark.pyspark.python={sys.executable}",
            "--conf",
            f"spark.executorEnv.PYTHONPATH={ROOT}",  # so do the executors, which read footers
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.executor.cores=1",
            "--conf",
            "spark.cores.max=2",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.eventLog.enabled=true",
            "--conf",
            "spark.eventLog.compress=false",
            "--conf",
            f"spark.eventLog.dir={events.as_uri()}",
            str(job),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ROWS 2000" in proc.stdout

    # The executors were the workers' (not the driver), and they ran the write's tasks.
    logs = [p for p in events.rglob("*") if p.is_file() and not p.name.startswith(("appstatus", "."))]
    assert logs, list(events.rglob("*"))
    lines = [
        json.loads(line) for log in sorted(logs) for line in log.read_text().splitlines() if line.strip()
    ]
    added = {
        e["Executor ID"]: e["Executor Info"]["Host"]
        for e in lines
        if e["Event"] == "SparkListenerExecutorAdded"
    }
    assert len(added) >= 2 and "driver" not in added
    task_executors = {e["Task Info"]["Executor ID"] for e in lines if e["Event"] == "SparkListenerTaskEnd"}
    assert len(task_executors & set(added)) >= 2

    meta = latest(table, "metaData")
    assert meta["configuration"]["delta.enableIcebergWriterCompatV1"] == "true"
    fields = json.loads(meta["schemaString"])["fields"]
    assert all(
        f["metadata"]["delta.columnMapping.physicalName"] == f"col-{f['metadata']['delta.columnMapping.id']}"
        for f in fields
    )
    # The footers were read on the workers' executors, by one job of the footer job group, and gave
    # the facts and the verdict the driver reads.
    footers = next(line.split() for line in proc.stdout.splitlines() if line.startswith("FOOTERS "))
    assert footers[1:3] == ["True", "True"], proc.stdout[-2000:]
    assert "CHECK True True" in proc.stdout, proc.stdout[-2000:]
    footer_stages = {
        s["Stage ID"]
        for e in lines
        if e["Event"] == "SparkListenerJobStart" and e["Properties"].get("spark.jobGroup.id") == JOB_GROUP
        for s in e["Stage Infos"]
    }
    footer_tasks = [
        e["Task Info"]["Executor ID"]
        for e in lines
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in footer_stages
    ]
    assert len(footer_tasks) == int(footers[3]) == 16  # two jobs (facts, check), 4 tasks per core each
    assert set(footer_tasks) <= set(added) and "driver" not in footer_tasks

    report = check_table(table, files="all")
    assert report.profile == "writer-v1"
    assert not report.violations and not report.findings, report.render_text()
    assert report.files_checked >= 4
