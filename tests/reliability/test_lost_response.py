"""A commit whose answer is lost, made real: a Delta log store that throws while committing.

The store (compiled here, a subclass of the guard's log store) throws ``IOException`` once for a
chosen commit file, either after writing it (the commit landed, the caller sees a failure) or before
(nothing landed). It runs in a separate Spark driver, because a session's log store is fixed when the
session starts. Afterwards the log, the data files and the rows are read here:

- thrown after writing: ``compat_write`` finds its commit in the log by the files it added and
  returns that version once; no second commit, no duplicated rows, no orphaned data file;
- thrown before writing: ``compat_write`` raises our own error (no Java stack), deletes the files it
  wrote, and the table is exactly as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pyspark
import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from icecompat_writer import sessions
from icecompat_writer.checking.check import check_table
from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.storage import io_for
from tests import support

STORE = "ThrowingCommitLogStore"
STORE_SOURCE = """
import io.icecompat.shim.guard.GuardedLogStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/** Throws once per rule in THROWING_COMMITS ("after:<commit file path>" or "before:<path>"). */
public class ThrowingCommitLogStore extends GuardedLogStore {
  private static final Set<String> FIRED = ConcurrentHashMap.newKeySet();

  public ThrowingCommitLogStore(Configuration conf) {
    super(conf);
  }

  private static boolean fires(String when, Path path) throws IOException {
    String rules = System.getenv("THROWING_COMMITS");
    if (rules == null) return false;
    String rule = when + ":" + path.toUri().getPath();
    for (String r : rules.split(",")) {
      if (r.equals(rule) && FIRED.add(rule)) {
        Files.writeString(Paths.get(System.getenv("THROWING_MARKER")), rule + "\\n",
            StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return true;
      }
    }
    return false;
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    if (fires("before", path)) throw new IOException("connection reset before the commit (test)");
    super.write(path, actions, overwrite, conf);
    if (fires("after", path)) throw new IOException("connection reset after the commit (test)");
  }
}
"""

CHILD = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import icecompat_writer
    from icecompat_writer.errors import IcecompatError
    from icecompat_writer.sessions import LOG_STORE_KEY
    from icecompat_writer.writing.api import compat_write

    jar, store, conf, tables = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4:]
    builder = SparkSession.builder.appName("lost-answer").config("spark.jars", jar)
    for key, value in conf.items():
        builder = builder.config(key, value)
    builder = icecompat_writer.configure(builder)
    spark = builder.config(LOG_STORE_KEY, store).getOrCreate()  # the guard's store, throwing once
    for table in tables:
        first = spark.range(0, 4).selectExpr("id", "cast(id % 2 as string) as part")
        compat_write(first, table, partition_by="part")
        second = spark.range(4, 10).selectExpr("id", "cast(id % 2 as string) as part")
        try:
            r = compat_write(second, table, mode="append", options={"txnAppId": "job", "txnVersion": "1"})
            print("RESULT " + json.dumps({"table": table, "version": r.version, "attempts": r.attempts}))
        except IcecompatError as err:
            print("REFUSED " + json.dumps({"table": table, "type": type(err).__name__, "text": str(err)}))
    """
)


def build_store(work: Path) -> Path:
    """Compile the throwing store against the shim and Delta's jars; return the jar."""
    src = work / "src" / f"{STORE}.java"
    src.parent.mkdir(parents=True)
    src.write_text(STORE_SOURCE)
    hadoop = (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-*.jar")
    classpath = [str(p) for p in [*sessions.runtime_jars(), *hadoop]]
    out = work / "classes"
    subprocess.run(
        ["javac", "--release", "17", "-cp", os.pathsep.join(classpath), "-d", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    jar = work / "throwing-store.jar"
    with zipfile.ZipFile(jar, "w") as archive:  # a jar is a zip: no second JVM to pack one class
        for path in sorted(out.rglob("*.class")):
            archive.write(path, path.relative_to(out).as_posix())
    return jar


def commit_file(table: Path, version: int) -> str:
    return str(table / "_delta_log" / f"{version:020d}.json")


def parquet_files(table: Path) -> set[str]:
    return {p.relative_to(table).as_posix() for p in table.rglob("*.parquet")}


@pytest.mark.spark
def test_a_commit_whose_answer_is_lost_lands_once_and_one_that_failed_leaves_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    jar = build_store(tmp_path / "store")
    landed, failed = tmp_path / "landed", tmp_path / "failed"
    marker = tmp_path / "fired.txt"
    env = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    env["THROWING_COMMITS"] = f"after:{commit_file(landed, 1)},before:{commit_file(failed, 1)}"
    env["THROWING_MARKER"] = str(marker)
    conf = json.dumps(support.CHILD_SPARK_CONF)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(jar), STORE, conf, str(landed), str(failed)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    said: dict[str, tuple[str, dict]] = {}
    for line in proc.stdout.splitlines():
        kind, _, body = line.partition(" ")
        if kind in ("RESULT", "REFUSED"):
            record = json.loads(body)
            said[record["table"]] = (kind, record)
    # the store really threw, once for each table
    assert marker.read_text().splitlines() == [
        f"after:{commit_file(landed, 1)}",
        f"before:{commit_file(failed, 1)}",
    ]

    # After writing: the landed commit is found and reported once; nothing duplicated or orphaned.
    kind, result = said[str(landed)]
    assert kind == "RESULT" and result["version"] == 1 and result["attempts"] == 1, result
    assert len(support.commits(landed)) == 2
    snap = read_snapshot(landed, io=io_for(landed))
    assert snap.version == 1 and snap.txns.get("job") == 1
    assert parquet_files(landed) == {a.path for a in snap.add_files}
    report = check_table(landed, "v3")
    assert report.violations == () and report.findings == (), report.render_text()
    expected = spark.range(0, 10).selectExpr("id", "cast(id % 2 as string) as part")
    actual = spark.read.format("delta").load(str(landed))
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)

    # Before writing: our error, the new files deleted, the table as it was after its first write.
    kind, refusal = said[str(failed)]
    assert kind == "REFUSED" and refusal["type"] == "JvmError", refusal
    assert "connection reset before the commit" in refusal["text"]
    assert "\tat " not in refusal["text"] and "Traceback" not in refusal["text"]
    assert len(support.commits(failed)) == 1
    snap = read_snapshot(failed, io=io_for(failed))
    assert snap.version == 0 and "job" not in snap.txns
    assert parquet_files(failed) == {a.path for a in snap.add_files}
    report = check_table(failed, "v3")
    assert report.violations == () and report.findings == (), report.render_text()
