"""Real object-store servers for the tests, started on 127.0.0.1 by the test run itself.

S3: moto's standalone server (``moto_server``, PyPI), a real HTTP endpoint that speaks the S3 REST API
(SigV4, ranged GETs, ``If-None-Match: *`` conditional PUTs). Every client of the run (Spark's ``s3a``
connector, pyarrow, boto3) reaches it the way it reaches AWS: an endpoint, a region and a key pair.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "AzuriteServer",
    "S3Server",
    "Store",
    "StoreRoot",
    "s3a_test_jars",
    "start_azurite",
    "start_s3_server",
]

# Where bin/setup puts Spark's s3a connector (hadoop-aws 3.5.0 and the AWS SDK v2 modules it loads) and
# its abfs connector (hadoop-azure 3.5.0),
# fetched by Maven from jvm_shim/test-jars/pom.xml; outside the package, which ships no cloud SDK.
TEST_JARS_DIR = Path(__file__).resolve().parent.parent / ".cache" / "test-jars"


class StoreRoot(NamedTuple):
    """A table location on one store (``warehouse/<name>`` in a bucket, a container or a local
    directory of its own) and what a test reads back from that bucket, by key below the bucket."""

    uri: str
    digest: Callable[[], dict[str, str]]  # every object below the bucket: key -> sha256 of its bytes
    read: Callable[[str], bytes]
    upload: Callable[[Path], list[str]]  # copies a local table's files to the table's location
    key: str  # the table's key prefix in its bucket: ``warehouse/<name>``


class Store:
    """One store a test runs on: ``local`` (a directory), ``s3a`` (moto) or ``abfs`` (Azurite).

    Called with a table name, it makes a new empty bucket (container, directory) and answers the
    table's :class:`StoreRoot`. ``spark``: the URI is the form the shared session's connector takes
    (``abfs://``); otherwise the form a process reaching the store through its environment uses
    (``abfss://``, as Spark users write it).
    """

    def __init__(self, kind: str, server: Any, base: Path, *, spark: bool) -> None:
        self.kind, self.server, self.base, self.spark = kind, server, base, spark

    def __repr__(self) -> str:
        return f"Store({self.kind})"

    def __call__(self, name: str) -> StoreRoot:
        key = f"warehouse/{name}"
        if self.kind == "local":
            bucket = self.base / f"b-{uuid.uuid4().hex[:12]}"
            bucket.mkdir(parents=True)

            def upload_local(local: Path) -> list[str]:
                import shutil

                shutil.copytree(local, bucket / key, dirs_exist_ok=True)
                return sorted(
                    p.relative_to(bucket).as_posix() for p in (bucket / key).rglob("*") if p.is_file()
                )

            return StoreRoot(
                str(bucket / key),
                lambda: _directory_digest(bucket),
                lambda k: (bucket / k).read_bytes(),
                upload_local,
                key,
            )
        if self.kind == "s3a":
            s3: S3Server = self.server
            b = s3.new_bucket()
            return StoreRoot(
                f"s3a://{b}/{key}",
                lambda: s3.bucket_digest(b),
                lambda k: bytes(s3.client().get_object(Bucket=b, Key=k)["Body"].read()),
                lambda local: s3.upload_dir(local, b, key),
                key,
            )
        azure: AzuriteServer = self.server
        c = azure.new_container()
        scheme = "abfs" if self.spark else "abfss"
        return StoreRoot(
            f"{scheme}://{c}@{azure.abfs_host}/{key}",
            lambda: azure.container_digest(c),
            lambda k: azure.read_blob(c, k),
            lambda local: azure.upload_dir(local, c, key),
            key,
        )


def _directory_digest(root: Path) -> dict[str, str]:
    """Every file (key -> sha256) and every directory (``key/`` -> ``dir``) below ``root``: on disk an
    empty directory left behind is a change too."""
    return {
        (p.relative_to(root).as_posix() + ("" if p.is_file() else "/")): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        )
        for p in sorted(root.rglob("*"))
    }


def s3a_test_jars() -> list[Path]:
    """The s3a and abfs jars for the test Spark session; refuses loudly when bin/setup has not fetched
    them."""
    jars = sorted(TEST_JARS_DIR.glob("*.jar"))
    if not all(any(p.name.startswith(name) for p in jars) for name in ("hadoop-aws-", "hadoop-azure-")):
        raise RuntimeError(f"the s3a test jars are missing from {TEST_JARS_DIR}; run bin/setup")
    return jars


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """One running moto server: where it listens and the credentials every client uses."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path | None = None
    access_key: str = "icecompat-test"
    secret_key: str = "icecompat-secret"
    region: str = "us-east-1"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        """A boto3 S3 client on this server (path-style addressing, as s3a is configured)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}),
        )

    def new_bucket(self, prefix: str = "t") -> str:
        """A fresh, empty bucket (S3 names: lower case, 3 to 63 characters)."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def environ(self) -> dict[str, str]:
        """The standard AWS environment variables that point SDKs and tools at this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
        }

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that point the ``s3a`` connector at this server (as a user points it at AWS).

        Path-style addressing (the bucket is in the path, not the host name), TLS off, a fixed key pair
        and region; few retries so that a broken server fails a test in seconds, not minutes.
        """
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": self.region,
            "spark.hadoop.fs.s3a.access.key": self.access_key,
            "spark.hadoop.fs.s3a.secret.key": self.secret_key,
            "spark.hadoop.fs.s3a.aws.credentials.provider": (
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
            ),
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.attempts.maximum": "2",
            "spark.hadoop.fs.s3a.retry.limit": "2",
        }

    @contextlib.contextmanager
    def routed(self, bucket: str) -> Iterator[None]:
        """Send ``bucket`` to this server even while a running Spark session points s3a elsewhere.

        The storage layer takes a running session's Hadoop settings before the environment; per-bucket
        settings (``fs.s3a.bucket.<b>.*``) are how one session reaches a second store.
        """
        from icecompat_writer import storage

        spark = None
        if "pyspark" in sys.modules:
            from icecompat_writer.jvm import bridge

            spark = bridge.driver_session()
        keys = {
            f"fs.s3a.bucket.{bucket}.endpoint": self.endpoint,
            f"fs.s3a.bucket.{bucket}.access.key": self.access_key,
            f"fs.s3a.bucket.{bucket}.secret.key": self.secret_key,
        }
        if spark is not None:
            for key, value in keys.items():
                spark.conf.set(key, value)
        storage.clear_cache()
        try:
            yield
        finally:
            if spark is not None:
                for key in keys:
                    spark.conf.unset(key)
            storage.clear_cache()

    def bucket_digest(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """Every object under ``prefix`` (key -> sha256 of its bytes): equal digests, untouched bucket."""
        c = self.client()
        out: dict[str, str] = {}
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                body = c.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                out[obj["Key"]] = hashlib.sha256(body).hexdigest()
        return out

    def upload_dir(self, local: Path, bucket: str, prefix: str) -> list[str]:
        """Copy every file under ``local`` to ``bucket`` below ``prefix`` (keys keep the relative path)."""
        c = self.client()
        keys: list[str] = []
        for path in sorted(p for p in Path(local).rglob("*") if p.is_file()):
            key = f"{prefix.rstrip('/')}/{path.relative_to(local).as_posix()}"
            c.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
            keys.append(key)
        return keys

    def request_mark(self) -> int:
        """A position in the server's request log: :meth:`requests_since` counts from here."""
        time.sleep(0.05)
        assert self.log_path is not None
        return self.log_path.stat().st_size

    def requests_since(self, mark: int) -> list[tuple[str, str, int]]:
        """``(method, path with query, status)`` of every request the server logged after ``mark``."""
        time.sleep(0.2)  # the server writes its access log line after answering
        assert self.log_path is not None
        with open(self.log_path, "rb") as fh:
            fh.seek(mark)
            text = fh.read().decode("utf-8", "replace")
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        return [
            (m.group(1), m.group(2), int(m.group(3)))
            for m in re.finditer(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})', text)
        ]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# moto's server app, served one request at a time: moto checks ``If-None-Match: *`` and then stores the
# object without a lock, so two conditional PUTs handled on two threads can both pass the check; S3
# itself decides them one after the other. Tests of conditional-create races use this server.
_SERIAL_MOTO = """
import sys
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple
app = DomainDispatcherApplication(create_backend_app)
run_simple(sys.argv[1], int(sys.argv[2]), app, threaded=False)
"""


def start_s3_server(log_dir: Path, *, serial: bool = False) -> S3Server:
    """Start ``moto_server`` on a free loopback port and wait until it answers.

    ``serial``: one request at a time (see ``_SERIAL_MOTO``), for races on conditional creates.
    """
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
    log = open(log_dir / "moto.log", "wb")  # the server writes it until stop()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["MOTO_PORT"] = str(port)
    argv = (
        [sys.executable, "-c", _SERIAL_MOTO, "127.0.0.1", str(port)]
        if serial
        else [*cmd, "-H", "127.0.0.1", "-p", str(port)]
    )
    proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}; see {log_dir / 'moto.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return S3Server(proc, port, log_path=log_dir / "moto.log")
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"moto_server did not listen on 127.0.0.1:{port} within 30 s")


# --- Azure Blob: Azurite --------------------------------------------------------------------------

AZURITE_PACKAGE = Path(__file__).resolve().parent / "azurite" / "package.json"
AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's fixed development key (public, documented with the emulator; it guards nothing).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_bin() -> Path:
    """The ``azurite-blob`` executable, installed by npm from tests/azurite/package.json into a cache
    directory outside the package (once; the pinned version names the directory)."""
    import json

    version = json.loads(AZURITE_PACKAGE.read_text())["dependencies"]["azurite"]
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "icecompat_writer"
        / f"azurite-{version}"
    )
    exe = cache / "node_modules" / ".bin" / "azurite-blob"
    if exe.exists():
        return exe
    cache.mkdir(parents=True, exist_ok=True)
    # Test runs in other checkouts share this cache: the first to need it installs, the others wait.
    with open(cache / ".install-lock", "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.exists():
            (cache / "package.json").write_bytes(AZURITE_PACKAGE.read_bytes())
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=cache,
                check=True,
                timeout=600,
            )
    return exe


@dataclass
class AzuriteServer:
    """One running Azurite Blob service on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def blob_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={self.blob_endpoint};"
        )

    def environ(self) -> dict[str, str]:
        """The standard Azure variable that points SDKs and tools at this emulator."""
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string()}

    @property
    def abfs_host(self) -> str:
        """The account host of an ``abfs://container@<host>/...`` URI for this emulator's account."""
        return f"{AZURITE_ACCOUNT}.dfs.core.windows.net"

    def abfs_conf(self) -> dict[str, str]:
        """Hadoop settings that point Spark's ``abfs`` connector (hadoop-azure) at this emulator.

        Azurite serves the Blob API only (no DFS endpoint), so the account is declared without a
        hierarchical namespace and reached through its Blob endpoint (``fs.azure.fns.account.service.type
        =BLOB``); ``fs.azure.abfs.endpoint`` replaces the account's host name with the emulator's address,
        over plain HTTP. The JDK's HTTP client and TLS are used (no native OpenSSL binding); few retries,
        so a broken emulator fails a test in seconds.
        """
        return {
            "fs.azure.abfs.endpoint": f"127.0.0.1:{self.port}",
            "fs.azure.always.use.https": "false",
            f"fs.azure.account.key.{self.abfs_host}": AZURITE_KEY,
            "fs.azure.account.auth.type": "SharedKey",
            "fs.azure.account.hns.enabled": "false",
            "fs.azure.fns.account.service.type": "BLOB",
            "fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
            "fs.azure.ssl.channel.mode": "Default_JSSE",
            "fs.azure.io.retry.max.retries": "1",
        }

    def new_container(self, prefix: str = "c") -> str:
        from azure.storage.blob import BlobServiceClient

        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        BlobServiceClient.from_connection_string(self.connection_string()).create_container(name)
        return name

    def container_digest(self, container: str) -> dict[str, str]:
        from azure.storage.blob import BlobServiceClient

        client = BlobServiceClient.from_connection_string(self.connection_string()).get_container_client(
            container
        )
        return {
            b.name: hashlib.sha256(client.download_blob(b.name).readall()).hexdigest()
            for b in client.list_blobs()
        }

    def upload_dir(self, local: Path, container: str, prefix: str) -> list[str]:
        """Copy every file under ``local`` into ``container`` below ``prefix`` (relative paths kept)."""
        from azure.storage.blob import BlobServiceClient

        client = BlobServiceClient.from_connection_string(self.connection_string()).get_container_client(
            container
        )
        names: list[str] = []
        for path in sorted(p for p in Path(local).rglob("*") if p.is_file()):
            name = f"{prefix.rstrip('/')}/{path.relative_to(local).as_posix()}"
            client.upload_blob(name, path.read_bytes(), overwrite=True)
            names.append(name)
        return names

    def read_blob(self, container: str, name: str) -> bytes:
        from azure.storage.blob import BlobServiceClient

        service = BlobServiceClient.from_connection_string(self.connection_string())
        return bytes(service.get_blob_client(container, name).download_blob().readall())

    def stop(self) -> None:
        # Azurite's graceful shutdown waits out the SDK clients' idle keep-alive connections (about
        # 10 s); its data is the run's temporary directory, so a second's grace is enough.
        self.process.terminate()
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_azurite(work_dir: Path) -> AzuriteServer:
    """Start Azurite's Blob service on a free loopback port (data in ``work_dir``) and wait for it."""
    exe = azurite_bin()
    port = _free_port()
    log = open(work_dir / "azurite.log", "wb")  # the server writes it until stop()
    proc = subprocess.Popen(
        [
            str(exe),
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(port),
            "--location",
            str(work_dir),
            "--skipApiVersionCheck",
            "--loose",
            "--silent",
        ],
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"azurite exited with {proc.returncode}; see {work_dir / 'azurite.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return AzuriteServer(proc, port)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"azurite did not listen on 127.0.0.1:{port} within 30 s")
