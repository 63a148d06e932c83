"""Real Iceberg catalog servers for the tests, started on 127.0.0.1 by the test run itself.

Hive Metastore: Apache Hive's standalone metastore 3.1.3, its handler served over Thrift on 127.0.0.1
by a small launcher (jvm_shim/hive-metastore/src: Hive 3.1's own server binds every interface), on an
embedded Derby database whose schema is created at start (DataNucleus ``autoCreateAll`` with schema
verification off, and the lock tables by Hive's ``TxnDbUtil``). Hive 4 metastores no longer serve the
``get_table`` call pyiceberg 0.12's Hive catalog makes, so 3.1.3 is the newest line pyiceberg can use.
The metastore resolves a new table's location through its own Hadoop file systems, so its class path
also holds hadoop-aws 3.1.0 (the Hadoop line of its jars; the Spark tests' hadoop-aws 3.5 does not mix
with hadoop-common 3.1) and its configuration the S3 server's ``fs.s3a.*`` settings. bin/setup
fetches it with Maven (jvm_shim/hive-metastore/pom.xml) into .cache/hive-metastore; one server serves
the whole run, started by the first test that asks for it.

REST: Apache Iceberg's own REST catalog test server (``RESTCatalogServer`` of iceberg-open-api, JDBC
backend on a sqlite file), with ``ResolvingFileIO`` so that it keeps tables whose metadata is local
(HadoopFileIO) or on the run's S3 server (Iceberg's S3FileIO). bin/setup fetches it with Maven
(jvm_shim/rest-catalog/pom.xml) into .cache/rest-catalog, next to a small Iceberg Java reader
(:func:`iceberg_java_read`). One server serves the run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = [
    "HIVE_METASTORE_JARS",
    "REST_CATALOG_JARS",
    "HiveMetastore",
    "RestCatalogServer",
    "iceberg_java_read",
    "start_hive_metastore",
    "start_rest_catalog",
]

_CACHE = Path(__file__).resolve().parent.parent / ".cache"
HIVE_METASTORE_JARS = _CACHE / "hive-metastore"
REST_CATALOG_JARS = _CACHE / "rest-catalog"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End a server started in a process group of its own (the JVM and anything it started)."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@dataclass
class HiveMetastore:
    """One running metastore: its Thrift URI, its warehouse directory and its log."""

    process: subprocess.Popen[bytes]
    port: int
    warehouse: Path
    log_path: Path

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def stop(self) -> None:
        _stop(self.process)


def _site_xml(settings: dict[str, str]) -> str:
    rows = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in settings.items()
    )
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{rows}</configuration>\n"


def start_hive_metastore(
    work_dir: Path, *, hadoop: dict[str, str] | None = None, timeout: float = 180.0
) -> HiveMetastore:
    """Start the metastore on a free loopback port with a fresh Derby database and wait until its Thrift
    port accepts connections (the schema is created before the socket is opened).

    ``hadoop`` holds Hadoop settings for the metastore's own file systems, e.g. the ``fs.s3a.*`` keys of
    an S3 server: the metastore resolves (and lists) a new table's location itself, so a table whose
    location is on S3 registers only if the metastore reaches the bucket. ``s3://`` locations (the
    scheme Iceberg metadata is registered with) go to the same S3A connector as ``s3a://`` ones.
    """
    if not (HIVE_METASTORE_JARS / ".stamp").exists():
        raise RuntimeError(f"{HIVE_METASTORE_JARS} is missing: run bin/setup")
    port = _free_port()
    conf_dir = work_dir / "conf"
    conf_dir.mkdir(parents=True, exist_ok=True)
    warehouse = work_dir / "warehouse"
    settings = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work_dir / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "metastore.schema.verification": "false",
        "metastore.warehouse.dir": f"file://{warehouse}",
        # partition pruning by expression without Hive's query compiler (not on the class path)
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        # the handler's always-on tasks without the replication dump cleaner (it lives in Hive's query
        # engine, not in the standalone metastore)
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        # hadoop-aws 3.1.0 (the Hadoop line of the metastore's jars) serves both schemes
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        **(hadoop or {}),
    }
    (conf_dir / "metastore-site.xml").write_text(_site_xml(settings))
    log_path = work_dir / "metastore.log"
    log = open(log_path, "wb")  # the server writes it until stop()
    proc = subprocess.Popen(
        [
            "java",
            "-Xmx384m",
            f"-Dderby.system.home={work_dir}",
            "-cp",
            f"{conf_dir}:{HIVE_METASTORE_JARS}/*",
            "io.icecompat.testservers.LoopbackMetastore",
            str(port),
        ],
        stdout=log,
        stderr=log,
        cwd=work_dir,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Hive Metastore exited with {proc.returncode}; see {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return HiveMetastore(proc, port, warehouse, log_path)
        except OSError:
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise RuntimeError(f"the Hive Metastore did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@dataclass
class RestCatalogServer:
    """One running REST catalog server: its URI and the S3 settings its FileIO uses."""

    process: subprocess.Popen[bytes]
    uri: str
    log_path: Path
    s3: dict[str, str]

    def stop(self) -> None:
        _stop(self.process)


def start_rest_catalog(work_dir: Path, s3: dict[str, str], *, timeout: float = 120.0) -> RestCatalogServer:
    """Start the REST catalog server on a free loopback port and wait until ``/v1/config`` answers.

    ``s3`` holds Iceberg S3FileIO properties (``s3.endpoint``, ``s3.access-key-id``, ...) for tables
    on the run's S3 server; the server reads them from ``CATALOG_*`` environment variables.
    """
    if not (REST_CATALOG_JARS / ".stamp").exists():
        raise RuntimeError(f"{REST_CATALOG_JARS} is missing: run bin/setup")
    port = _free_port()
    properties = {
        "warehouse": f"file://{work_dir / 'warehouse'}",
        "rest.port": str(port),
        # a sqlite file, not the server's default in-memory database: that one is per JDBC connection,
        # so concurrent requests on the server's connection pool would see different catalogs
        "uri": f"jdbc:sqlite:file:{work_dir / 'rest-backend.db'}",
        "io-impl": "org.apache.iceberg.io.ResolvingFileIO",
        **s3,
    }
    # the server's naming: CATALOG_ + the key with '-' as '__' and '.' as '_', upper case
    env = {**os.environ}
    for key, value in properties.items():
        env["CATALOG_" + key.replace("-", "__").replace(".", "_").upper()] = value
    log_path = work_dir / "rest-catalog.log"
    log = open(log_path, "wb")  # the server writes it until stop()
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", f"{REST_CATALOG_JARS}/*", "org.apache.iceberg.rest.RESTCatalogServer"],
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/v1/config", timeout=2) as resp:
                json.loads(resp.read())
            return RestCatalogServer(proc, uri, log_path, dict(s3))
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise RuntimeError(f"the REST catalog server did not start; see {log_path}") from None
            time.sleep(0.3)


def iceberg_java_read(
    server: RestCatalogServer, identifier: str
) -> tuple[int | None, list[dict[str, object]]]:
    """The current snapshot id and rows of ``identifier`` as Iceberg Java's generic reader reads them
    through the REST catalog (``io.icecompat.testservers.IcebergRead``), with the server's S3
    settings."""
    props = [f"{k}={v}" for k, v in server.s3.items()]
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{REST_CATALOG_JARS}/*",
            "io.icecompat.testservers.IcebergRead",
            server.uri,
            identifier,
            *props,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"Iceberg Java failed to read {identifier}:\n{done.stderr[-4000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    snapshot = None if lines[-2] == "none" else int(lines[-2])
    return snapshot, list(json.loads(lines[-1]))
