"""The guard's log store on every scheme, in sessions configured differently from the shared one.

Each case needs its own JVM (log stores are static settings): a session where a user names a log store
of their own for ``s3a`` (kept, and wrapped by the guard's), and one whose ``s3a`` key points to a plain
Delta store (``icecompat doctor`` and the first guarded write name the unchecked scheme).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyspark
import pytest

from icecompat_writer import sessions
from icecompat_writer.sessions import GUARD_LOG_STORE, delegate_key, log_store_key
from tests.objectstores import S3Server, s3a_test_jars

# each test starts its own Spark in a child process
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STORE = "RecordingS3LogStore"
STORE_SOURCE = """
import io.delta.storage.S3SingleDriverLogStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/** Delta's S3 store that also notes every file it writes in $RECORDING_LOG (a user's own store). */
public class RecordingS3LogStore extends S3SingleDriverLogStore {
  public RecordingS3LogStore(Configuration conf) {
    super(conf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    super.write(path, actions, overwrite, conf);
    Files.writeString(Paths.get(System.getenv("RECORDING_LOG")), path.getName() + "\\n",
        StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }
}
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "ICECOMPAT_JARS_DIR"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def _build_store(work: Path) -> Path:
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
    jar = work / "recording-store.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(out), "."], check=True, capture_output=True)
    return jar


def test_a_users_own_s3a_log_store_is_wrapped_and_still_writes_every_commit(
    tmp_path: Path, s3_server: S3Server
) -> None:
    jar = _build_store(tmp_path / "store")
    recording = tmp_path / "written.txt"
    bucket = s3_server.new_bucket()
    conf = {
        **s3_server.spark_conf(),
        "spark.master": "local[1]",
        "spark.jars": ",".join(str(p) for p in [jar, *s3a_test_jars()]),
        log_store_key("s3a"): STORE,  # the user's own choice for s3a
    }
    proc = _run(
        """
        import json, sys
        import icecompat_writer
        from icecompat_writer.jvm import bridge
        from icecompat_writer.jvm.bridge import translate_exception
        from tests.objectstores import S3Server

        conf, bucket, port = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        spark = icecompat_writer.session("own-store", guard=True, **conf)
        c = spark.sparkContext.getConf()
        keys = {k: c.get(k) for k in (sys.argv[4], sys.argv[5])}
        status = bridge.guard_status(spark)
        s3a = status["log_stores"]["s3a"]
        print("STATUS " + json.dumps({"keys": keys, "missing": status["missing"], "s3a": s3a}))
        uri = f"s3a://{bucket}/t"
        spark.sql(f"CREATE TABLE delta.`{uri}` (id BIGINT) USING delta "
                  "TBLPROPERTIES ('delta.enableIcebergWriterCompatV1' = 'true')")
        spark.sql(f"INSERT INTO delta.`{uri}` VALUES (1)")
        trusted = spark._jvm.io.icecompat.shim.guard.Guard  # an ALTER no guarded write would make
        trusted.enterTrusted()
        spark.sql(f"ALTER TABLE delta.`{uri}` ADD COLUMNS (tiny TINYINT)")
        trusted.exitTrusted()
        s3 = S3Server(None, port)
        before = s3.bucket_digest(bucket)
        try:
            spark.sql(f"INSERT INTO delta.`{uri}` VALUES (2, 3)")
            print("COMMITTED")
        except Exception as e:
            err = translate_exception(e)
            print("REFUSED " + json.dumps([type(err).__name__, sorted({v.rule for v in err.violations})]))
        print("UNTOUCHED " + json.dumps(s3.bucket_digest(bucket) == before))
        """,
        json.dumps(conf),
        bucket,
        str(s3_server.port),
        log_store_key("s3a"),
        delegate_key("s3a"),
        env={"RECORDING_LOG": str(recording)},
    )
    out = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in proc.stdout.splitlines() if " " in line}
    assert "STATUS" in out, proc.stdout + proc.stderr[-3000:]
    status = json.loads(out["STATUS"])
    assert status["keys"] == {log_store_key("s3a"): GUARD_LOG_STORE, delegate_key("s3a"): STORE}
    assert status["missing"] == []
    assert status["s3a"] == {
        "impl": GUARD_LOG_STORE,
        "guarded": True,
        "delegate": STORE,
        "delegate_configured": True,
    }
    # said so, naming both keys
    assert f"your log store {STORE} is kept and wrapped" in proc.stderr
    # the guard checked the INSERT; the user's store wrote every commit that landed, and only those
    assert json.loads(out["REFUSED"]) == ["CompatViolation", ["IWC1-NO-BYTE-SHORT", "IWC1-PHYSICAL-NAME"]]
    assert json.loads(out["UNTOUCHED"]) is True
    written = recording.read_text().split()
    assert [f"{v:020d}.json" for v in range(3)] == [n for n in written if n.endswith(".json")]


def test_doctor_and_the_first_guarded_write_name_a_scheme_whose_commits_go_unchecked(tmp_path: Path) -> None:
    good = sessions.spark_defaults()
    plain = f"{log_store_key('s3a')}  io.delta.storage.S3SingleDriverLogStore"
    conf = tmp_path / "s3a-plain.conf"
    conf.write_text(good.replace(f"{log_store_key('s3a')}  {GUARD_LOG_STORE}", plain))
    assert conf.read_text() != good
    proc = _run(
        """
        import sys
        from pyspark.sql import SparkSession
        from icecompat_writer.cli.main import main
        from icecompat_writer.cli.settings import read_properties
        from icecompat_writer.jvm.bridge import translate_exception

        print("EXIT", main(["doctor", "--properties-file", sys.argv[1]]))
        builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
        for key, value in read_properties(sys.argv[1]).items():
            builder.config(key, value)
        spark = builder.config("spark.icecompat.profile", "v3").getOrCreate()
        try:
            spark.range(3).write.format("delta").save(sys.argv[2])
            print("COMMITTED")
        except Exception as e:
            err = translate_exception(e)
            print("REFUSED", type(err).__name__, str(err))
        """,
        str(conf),
        str(tmp_path / "t"),
    )
    lines = proc.stdout.splitlines()
    assert "EXIT 1" in lines, proc.stdout + proc.stderr[-3000:]
    guard = next(x for x in lines if "session guard" in x)
    assert guard.startswith("BAD") and "s3a:// (io.delta.storage.S3SingleDriverLogStore)" in guard
    per_scheme = next(x for x in lines if "commit check per scheme" in x)
    assert (
        per_scheme.startswith("BAD")
        and "UNCHECKED: s3a (io.delta.storage.S3SingleDriverLogStore)" in per_scheme
    )
    refused = next(x for x in lines if x.startswith("REFUSED"))
    assert refused.startswith("REFUSED SessionConfigError") and "s3a://" in refused, refused
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t").rglob("*.json"))
