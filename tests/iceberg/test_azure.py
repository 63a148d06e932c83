"""Iceberg metadata for a Delta table on Azure Blob (Azurite on 127.0.0.1): written next to the log in
the container, ``v<N>.metadata.json`` committed with ``If-None-Match: *`` (one winner among concurrent
emitters), and pyiceberg reading the table through its pyarrow ADLS FileIO pointed at the emulator.

The Delta tables are synthetic (tests/cli/synthetic.py), built on disk and uploaded; the emitter
reaches the emulator through ``AZURE_STORAGE_CONNECTION_STRING``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import StaticTable
from pyiceberg.typedef import EMPTY_DICT, Properties

from icecompat_writer.errors import ConcurrentWriteError
from icecompat_writer.iceberg import write_iceberg_metadata
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb
from tests.objectstores import AZURITE_ACCOUNT, AZURITE_KEY

HOST = f"{AZURITE_ACCOUNT}.dfs.core.windows.net"


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


def pyiceberg_ids(server: Any, metadata_uri: str) -> list[int]:
    """The ``id`` column pyiceberg reads, through pyarrow's Azure filesystem on the emulator's address."""
    authority = f"127.0.0.1:{server.port}"
    table = StaticTable.from_metadata(
        metadata_uri,
        properties={
            "py-io-impl": f"{__name__}.ContainerFileIO",
            "adls.account-name": AZURITE_ACCOUNT,
            "adls.account-key": AZURITE_KEY,
            "adls.blob-storage-authority": authority,
            "adls.dfs-storage-authority": authority,
            "adls.blob-storage-scheme": "http",
            "adls.dfs-storage-scheme": "http",
        },
    )
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_iceberg_metadata_on_azurite_and_pyiceberg_reads_it(azure_env: Any, tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=3, rows_per_file=4)
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "warehouse/t")
    before = azure_env.container_digest(container)
    uri = f"abfss://{container}@{HOST}/warehouse/t"

    result = write_iceberg_metadata(uri)

    assert result.written and result.metadata_version == 1 and result.delta_version == 0
    assert str(result.metadata_path) == f"{uri}/metadata/v1.metadata.json"
    after = azure_env.container_digest(container)
    assert {k: v for k, v in after.items() if k in before} == before  # the Delta table is untouched
    assert all(k.startswith("warehouse/t/metadata/") for k in set(after) - set(before))
    meta = json.loads(azure_env.read_blob(container, "warehouse/t/metadata/v1.metadata.json"))
    assert meta["location"] == uri
    assert meta["snapshots"][0]["manifest-list"].startswith(f"{uri}/metadata/snap-")
    assert azure_env.read_blob(container, "warehouse/t/metadata/version-hint.text") == b"1"
    assert pyiceberg_ids(azure_env, f"{uri}/metadata/v1.metadata.json") == list(range(12))

    # an append converted incrementally: v2, read back with the new rows
    size = write_data_file(tmp_path / "new" / "new.parquet", table.metadata, 100, 2)
    add = lb.add("new.parquet", stats=stats(2), size=size)
    add["add"].update(baseRowId=12, defaultRowCommitVersion=1)
    log = tmp_path / "new" / "_delta_log"
    log.mkdir()
    (log / "00000000000000000001.json").write_text(
        "\n".join(json.dumps(a) for a in [lb.commit_info("WRITE"), add]) + "\n"
    )
    azure_env.upload_dir(tmp_path / "new", container, "warehouse/t")
    again = write_iceberg_metadata(uri)
    assert (again.written, again.metadata_version, again.delta_version) == (True, 2, 1)
    assert pyiceberg_ids(azure_env, f"{uri}/metadata/v2.metadata.json") == [*range(12), 100, 101]
    assert write_iceberg_metadata(uri).written is False


def test_two_concurrent_emitters_on_azurite_never_both_commit_a_version(
    azure_env: Any, tmp_path: Path
) -> None:
    table = build_table(tmp_path / "t", "v3", files=2)
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "warehouse/t")
    uri = f"abfss://{container}@{HOST}/warehouse/t"
    barrier = threading.Barrier(3)
    outcomes: list[Any] = []

    def emit() -> None:
        barrier.wait()
        try:
            outcomes.append(write_iceberg_metadata(uri))
        except Exception as e:  # kept, so that an unexpected error shows in the assertion
            outcomes.append(e)

    threads = [threading.Thread(target=emit) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    committed = [o for o in outcomes if not isinstance(o, Exception) and o.written]
    others = [o for o in outcomes if o not in committed]
    assert len(committed) == 1, outcomes  # one wins the version
    assert committed[0].metadata_version == 1
    # the others lost the conditional create (and say so) or found the metadata already up to date
    assert all(isinstance(o, ConcurrentWriteError) or o.written is False for o in others), outcomes
    names = {k for k in azure_env.container_digest(container) if k.endswith(".metadata.json")}
    assert names == {"warehouse/t/metadata/v1.metadata.json"}
    assert pyiceberg_ids(azure_env, f"{uri}/metadata/v1.metadata.json") == list(range(6))
