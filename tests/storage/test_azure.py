"""The storage operations on Azure Blob, against Azurite (npm) on 127.0.0.1.

Reached the way a user's process reaches an emulator: ``AZURE_STORAGE_CONNECTION_STRING`` only; the
table URIs are the ``abfss://container@account.dfs.core.windows.net/...`` form Spark uses.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from icecompat_writer import storage
from icecompat_writer.storage import ObjectPath, parse_location

ACCOUNT_HOST = "devstoreaccount1.dfs.core.windows.net"


def obj(uri: str) -> ObjectPath:
    loc = parse_location(uri)
    assert isinstance(loc, ObjectPath)
    return loc


@pytest.fixture
def root(azure_env: Any) -> ObjectPath:
    return obj(f"abfss://{azure_env.new_container()}@{ACCOUNT_HOST}/warehouse/t")


def test_list_read_write_delete_on_azurite(azure_env: Any, root: ObjectPath) -> None:
    storage.write_bytes(root / "_delta_log/00000000000000000000.json", b'{"a":1}\n')
    storage.write_bytes(root / "_delta_log/_sidecars/x.parquet", b"y")
    storage.write_bytes(root / "part-0.parquet", b"0123456789")
    assert {e.name: e.size for e in storage.list_files(root / "_delta_log")} == {
        "00000000000000000000.json": 8
    }
    tree = {e.location.relative_to(root).as_posix(): e.size for e in storage.list_tree(root)}
    assert tree == {
        "_delta_log/00000000000000000000.json": 8,
        "_delta_log/_sidecars/x.parquet": 1,
        "part-0.parquet": 10,
    }
    assert storage.read_bytes(root / "_delta_log/00000000000000000000.json") == b'{"a":1}\n'
    assert storage.read_tail(root / "part-0.parquet", 4) == (b"6789", 10)
    assert storage.read_range(root / "part-0.parquet", 2, 3) == b"234"
    assert storage.delete_files([root / "part-0.parquet", root / "missing"]) == 1
    assert "warehouse/t/part-0.parquet" not in azure_env.container_digest(root.bucket)
    with pytest.raises(FileNotFoundError):
        storage.read_bytes(root / "missing")


def test_create_if_absent_lets_exactly_one_writer_win_on_azurite(azure_env: Any, root: ObjectPath) -> None:
    target = root / "metadata/v1.metadata.json"
    results: dict[int, bool] = {}
    barrier = threading.Barrier(4)

    def attempt(i: int) -> None:
        barrier.wait()
        results[i] = storage.create_if_absent(target, f"writer {i}".encode())

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert storage.read_bytes(target) == f"writer {winners[0]}".encode()
