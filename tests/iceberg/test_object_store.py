"""Iceberg metadata for a Delta table on every store (the ``store`` fixture: local disk, S3 on moto,
Azure Blob on Azurite, both on 127.0.0.1): written next to the log, ``s3://`` locations for an ``s3a``
table, the metadata file committed with a conditional create (``If-None-Match: *`` on the object
stores) so that concurrent emitters never both commit one version, and pyiceberg reading the table.

The Delta tables are synthetic (tests/cli/synthetic.py: compliant Parquet with field ids), built on
disk and copied to the store; the emitter reaches a server through the standard environment variables
(``AWS_*``, ``AZURE_STORAGE_CONNECTION_STRING``).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import StaticTable
from pyiceberg.typedef import EMPTY_DICT, Properties

from icecompat_writer import storage
from icecompat_writer.errors import ConcurrentWriteError
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.storage import io_for
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb
from tests.objectstores import AZURITE_ACCOUNT, AZURITE_KEY, Store, StoreRoot


class ContainerFileIO(PyArrowFileIO):
    """pyiceberg's pyarrow FileIO, reading ``abfss://container@host/key`` as container + key.

    pyiceberg 0.12 hands pyarrow the whole ``container@host`` as the container name (Azurite answers
    InvalidResourceName); Hadoop and Iceberg's Java FileIO take the part before ``@``. Its other ADLS
    FileIO (fsspec) needs adlfs, which the project does not pin. Everything else (metadata, manifest
    lists, manifests, data files, each read from the emulator over HTTP) is pyiceberg's own.
    """

    @staticmethod
    def parse_location(location: str, properties: Properties = EMPTY_DICT) -> tuple[str, str, str]:
        scheme, netloc, path = PyArrowFileIO.parse_location(location, properties)
        if scheme in {"abfs", "abfss", "wasb", "wasbs"} and "@" in netloc:
            path = netloc.split("@", 1)[0] + path[len(netloc) :]
        return scheme, netloc, path


def iceberg_location(store: Store, where: StoreRoot) -> str:
    """The table location Iceberg metadata records: ``s3://`` for an ``s3a`` table (what Iceberg
    readers open), a ``file://`` URI for a local path, an Azure URI as given."""
    if store.kind == "local":
        return f"file://{where.uri}"
    return where.uri.replace("s3a://", "s3://", 1)


def pyiceberg_ids(store: Store, metadata_uri: str) -> list[int]:
    """The ``id`` column pyiceberg reads, through its pyarrow FileIO on the store's server."""
    properties: dict[str, str] = {}
    if store.kind == "s3a":
        server = store.server
        properties = {
            "s3.endpoint": server.endpoint,
            "s3.access-key-id": server.access_key,
            "s3.secret-access-key": server.secret_key,
            "s3.region": server.region,
        }
    elif store.kind == "abfs":
        authority = f"127.0.0.1:{store.server.port}"
        properties = {
            "py-io-impl": f"{__name__}.ContainerFileIO",
            "adls.account-name": AZURITE_ACCOUNT,
            "adls.account-key": AZURITE_KEY,
            "adls.blob-storage-authority": authority,
            "adls.dfs-storage-authority": authority,
            "adls.blob-storage-scheme": "http",
            "adls.dfs-storage-scheme": "http",
        }
    table = StaticTable.from_metadata(metadata_uri, properties=properties)
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_iceberg_metadata_next_to_the_log_and_pyiceberg_reads_it(store: Store, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=3, rows_per_file=4)
    where = store("t")
    where.upload(table.root)
    before = where.digest()
    uri, location = where.uri, iceberg_location(store, where)

    result = write_iceberg_metadata(uri)

    assert result.written and result.metadata_version == 1 and result.delta_version == 0
    assert str(result.metadata_path) == f"{uri}/metadata/v1.metadata.json"
    after = where.digest()
    assert {k: v for k, v in after.items() if k in before} == before  # the Delta table is untouched
    assert all(k.startswith(f"{where.key}/metadata/") for k in set(after) - set(before))
    meta = json.loads(where.read(f"{where.key}/metadata/v1.metadata.json"))
    assert meta["location"] == location
    assert meta["snapshots"][0]["manifest-list"].startswith(f"{location}/metadata/snap-")
    assert where.read(f"{where.key}/metadata/version-hint.text") == b"1"
    assert pyiceberg_ids(store, f"{location}/metadata/v1.metadata.json") == list(range(12))

    # an append converted incrementally: v2, read back with the new rows
    size = write_data_file(tmp_path / "new" / "new.parquet", table.metadata, 100, 2)
    add = lb.add("new.parquet", stats=stats(2), size=size)
    add["add"].update(baseRowId=12, defaultRowCommitVersion=1)
    log = tmp_path / "new" / "_delta_log"
    log.mkdir()
    (log / "00000000000000000001.json").write_text(
        "\n".join(json.dumps(a) for a in [lb.commit_info("WRITE"), add]) + "\n"
    )
    where.upload(tmp_path / "new")
    again = write_iceberg_metadata(uri)
    assert (again.written, again.metadata_version, again.delta_version) == (True, 2, 1)
    assert pyiceberg_ids(store, f"{location}/metadata/v2.metadata.json") == [*range(12), 100, 101]
    assert write_iceberg_metadata(uri).written is False


def referenced_avro(where: StoreRoot, location: str, version: int) -> set[str]:
    """Every manifest list and manifest the metadata of ``version`` and the earlier metadata files of
    its ``metadata-log`` reach (keys in the bucket)."""
    from icecompat_writer.iceberg.avro import read_avro

    meta = json.loads(where.read(f"{where.key}/metadata/v{version}.metadata.json"))
    prefix = location.removesuffix(where.key)

    def key(path: str) -> str:
        assert path.startswith(prefix), (path, prefix)
        return path.removeprefix(prefix)

    docs = [meta] + [json.loads(where.read(key(e["metadata-file"]))) for e in meta["metadata-log"]]
    keys: set[str] = set()
    for snap in (s for doc in docs for s in doc["snapshots"]):
        keys.add(key(snap["manifest-list"]))
        records, _ = read_avro(
            storage.parse_location(snap["manifest-list"]),
            io=io_for(storage.parse_location(snap["manifest-list"])),
        )
        keys.update(key(str(r["manifest_path"])) for r in records)
    return keys


EMITTERS = 3


def test_concurrent_emitters_never_both_commit_a_version(
    store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    table = build_table(tmp_path / "t", "v3", files=4, rows_per_file=2)
    if store.kind != "s3a":
        _race_emitters(store, store("t"), table, tmp_path)
        return
    # S3 decides conditional creates one at a time: the race runs on the one-request-at-a-time server
    serial = Store("s3a", request.getfixturevalue("serial_env"), tmp_path, spark=False)
    where = serial("t")
    with serial.server.routed(where.uri.split("/")[2]):  # a running session points s3a elsewhere
        _race_emitters(serial, where, table, tmp_path)


def _race_emitters(store: Store, where: StoreRoot, table: Any, tmp_path: Path) -> None:
    where.upload(table.root)
    uri, location = where.uri, iceberg_location(store, where)

    for round_ in range(3):
        if round_:  # a new commit: the next version's race
            new = tmp_path / f"r{round_}"
            name = f"r{round_}.parquet"
            size = write_data_file(new / name, table.metadata, 1000 * round_, 2)
            add = lb.add(name, stats=stats(2), size=size)
            add["add"].update(baseRowId=8 + 2 * (round_ - 1), defaultRowCommitVersion=round_)
            (new / "_delta_log").mkdir()
            (new / "_delta_log" / f"{round_:020d}.json").write_text(
                "\n".join(json.dumps(a) for a in [lb.commit_info("WRITE"), add]) + "\n"
            )
            where.upload(new)
        barrier = threading.Barrier(EMITTERS)
        outcomes: list[Any] = []

        def emit(barrier: threading.Barrier = barrier, outcomes: list[Any] = outcomes) -> None:
            barrier.wait()
            try:
                outcomes.append(write_iceberg_metadata(uri))
            except Exception as e:  # kept, so that an unexpected error shows in the assertion
                outcomes.append(e)

        threads = [threading.Thread(target=emit) for _ in range(EMITTERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        committed = [o for o in outcomes if not isinstance(o, Exception) and o.written]
        others = [o for o in outcomes if o not in committed]
        assert len(committed) == 1, outcomes  # one wins this version
        assert committed[0].metadata_version == round_ + 1
        # the others lost the conditional create (and say so) or found the tree already up to date
        assert len(others) == EMITTERS - 1, outcomes
        assert all(isinstance(o, ConcurrentWriteError) or o.written is False for o in others), outcomes
        keys = sorted(k for k in where.digest() if k.startswith(f"{where.key}/metadata/"))
        versions = sorted(k for k in keys if k.endswith(".metadata.json"))
        assert versions == [f"{where.key}/metadata/v{v}.metadata.json" for v in range(1, round_ + 2)]
        avro = {k for k in keys if k.endswith(".avro")}
        assert avro == referenced_avro(where, location, round_ + 1)  # the losers left no file behind

    expected = [*range(8), 1000, 1001, 2000, 2001]
    assert pyiceberg_ids(store, f"{location}/metadata/v3.metadata.json") == expected
