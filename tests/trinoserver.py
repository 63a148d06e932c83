"""Trino for the tests: a single-node server of Trino 470 with only the Iceberg connector's plugin, started on
127.0.0.1 by the test run itself, and a small client of Trino's HTTP protocol.

bin/setup unpacks the server's libraries and the Iceberg plugin into .cache/trino-server-470 (Maven,
jvm_shim/engine-jars/pom.xml). Trino 470 needs Java 23 or newer: the server runs on the machine's
Temurin JDK 25 (``TRINO_JAVA_HOME`` chooses another), the rest of the run stays on Java 17. Catalogs are
files of ``<work dir>/catalog/``, one per Iceberg catalog the tests read through (``rest``,
``hive_metastore``); Trino 470 reads table files through its native S3 file system or through its
legacy Hadoop file system, which is how it reaches tables on local disk (``file://``).

The client is Trino's client protocol as documented ("Client protocol", Trino docs): POST the statement
to ``/v1/statement``, then GET each ``nextUri`` until there is none, collecting ``data`` rows; a query
that failed answers ``error``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.catalogservers import _free_port, _stop

__all__ = ["TRINO_HOME", "TrinoError", "TrinoServer", "start_trino"]

TRINO_HOME = Path(__file__).resolve().parent.parent / ".cache" / "trino-server-470"
JAVA_HOME = Path(os.environ.get("TRINO_JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"))


class TrinoError(Exception):
    """A query Trino answered with an error: its ``errorName`` and message."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


@dataclass
class TrinoServer:
    """One running Trino node: its HTTP URI and its log."""

    process: subprocess.Popen[bytes]
    uri: str
    log_path: Path

    def query(self, sql: str, *, timeout: float = 120.0) -> list[dict[str, Any]]:
        """The rows of ``sql`` as dicts of column name to the JSON value Trino sends. A node that has
        just started may not have announced itself to the scheduler yet (``NO_NODES_AVAILABLE``, even
        after a query on ``system.runtime.nodes`` ran): the statement is sent again until it has."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._query(sql, timeout=timeout)
            except TrinoError as err:
                if err.name != "NO_NODES_AVAILABLE" or time.monotonic() > deadline:
                    raise
            time.sleep(0.5)

    def _query(self, sql: str, *, timeout: float) -> list[dict[str, Any]]:
        request = urllib.request.Request(
            f"{self.uri}/v1/statement", data=sql.encode(), headers={"X-Trino-User": "test"}, method="POST"
        )
        deadline = time.monotonic() + timeout
        columns: list[str] | None = None
        rows: list[list[Any]] = []
        while True:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                answer = json.loads(resp.read())
            if "error" in answer:
                error = answer["error"]
                causes, info = [], error.get("failureInfo")
                while info:  # the causes' messages say why (Trino's own message often only says where)
                    causes.append(f"{info.get('type')}: {info.get('message')}")
                    info = info.get("cause")
                message = "; caused by ".join(causes) or error.get("message", "")
                raise TrinoError(error.get("errorName", "?"), message)
            if columns is None and "columns" in answer:
                columns = [c["name"] for c in answer["columns"]]
            rows.extend(answer.get("data", []))
            following = answer.get("nextUri")
            if following is None:
                return [dict(zip(columns or [], row, strict=True)) for row in rows]
            if time.monotonic() > deadline:
                raise TimeoutError(f"Trino did not finish within {timeout:.0f} s: {sql}")
            request = urllib.request.Request(following, headers={"X-Trino-User": "test"})

    def stop(self) -> None:
        _stop(self.process)


def _properties(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def start_trino(
    work_dir: Path, catalogs: dict[str, dict[str, str]], *, timeout: float = 180.0
) -> TrinoServer:
    """Start one Trino node (coordinator and worker) on a free loopback port with the ``catalogs`` (name:
    connector properties), and wait until it answers queries. Memory is held small: 1 GB of heap, queries
    of at most 256 MB."""
    if not (TRINO_HOME / "plugin" / "iceberg").is_dir():
        raise RuntimeError(f"{TRINO_HOME} is missing: run bin/setup")
    port = _free_port()
    catalog_dir = work_dir / "catalog"
    catalog_dir.mkdir(parents=True, exist_ok=True)
    for name, values in catalogs.items():
        (catalog_dir / f"{name}.properties").write_text(_properties(values))
    config = work_dir / "config.properties"
    config.write_text(
        _properties(
            {
                "node.environment": "test",
                "node.id": "icecompat-test",
                "node.bind-ip": "127.0.0.1",
                "node.internal-address": "127.0.0.1",
                "coordinator": "true",
                "node-scheduler.include-coordinator": "true",
                "http-server.http.port": str(port),
                "http-server.log.enabled": "false",
                "discovery.uri": f"http://127.0.0.1:{port}",
                "plugin.dir": str(TRINO_HOME / "plugin"),
                "catalog.config-dir": str(catalog_dir),
                "query.max-memory": "256MB",
                "query.max-memory-per-node": "256MB",
                "task.concurrency": "2",
            }
        )
    )
    log_path = work_dir / "trino.log"
    log = open(log_path, "wb")  # the server writes it until stop()
    proc = subprocess.Popen(
        [
            str(JAVA_HOME / "bin" / "java"),
            "-Xmx1G",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djdk.attach.allowAttachSelf=true",
            "--enable-native-access=ALL-UNNAMED",
            f"-Dconfig={config}",
            "-cp",
            f"{TRINO_HOME}/lib/*",
            "io.trino.server.TrinoServer",
        ],
        stdout=log,
        stderr=log,
        cwd=work_dir,
        start_new_session=True,
    )
    server = TrinoServer(proc, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + timeout
    while True:
        # Started when /v1/info stops saying "starting"; until its node has announced itself to the
        # scheduler, :meth:`TrinoServer.query` sends statements again.
        try:
            with urllib.request.urlopen(f"{server.uri}/v1/info", timeout=2) as resp:
                if not json.loads(resp.read()).get("starting", True):
                    return server
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                server.stop()
            raise RuntimeError(f"Trino did not start; see {log_path}")
        time.sleep(0.5)
