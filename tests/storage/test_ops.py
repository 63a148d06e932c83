"""The storage operations on local disk, on S3 (moto on 127.0.0.1) and on Azure Blob (Azurite on
127.0.0.1); the tests taking the ``store`` fixture run once on each.

Every test reaches a server the way a user's process does: through the standard environment variables
(``AWS_*``, ``AZURE_STORAGE_CONNECTION_STRING``; see the ``s3_env`` and ``azure_env`` fixtures), never
through options passed in code; Azure tables are named in the ``abfss://container@account.dfs...``
form Spark uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from icecompat_writer import storage
from icecompat_writer.errors import SetupError
from icecompat_writer.storage import Location, NotRegularFileError, ObjectPath, parse_location
from tests.objectstores import Store


def obj(uri: str) -> ObjectPath:
    loc = parse_location(uri)
    assert isinstance(loc, ObjectPath)
    return loc


@pytest.fixture
def bucket(s3_env: Any) -> str:
    return s3_env.new_bucket()


def test_list_read_write_delete_round_trip(store: Store) -> None:
    where = store("t")
    root = parse_location(where.uri)
    io = storage.io_for(root)
    assert isinstance(io, storage.ObjectStoreFileIO if store.kind != "local" else storage.LocalFileIO)
    io.new_output(root / "_delta_log/00000000000000000000.json").write(b'{"a":1}\n')
    io.new_output(root / "_delta_log/.hidden").write(b"x")
    io.new_output(root / "_delta_log/_sidecars/x.parquet").write(b"y")
    io.new_output(root / "part-0.parquet").write(b"0123456789")

    listed = {e.name: e.size for e in io.list_files(root / "_delta_log")}
    # no dot-files, no sub-directories; a local listing carries no size (no stat per log file)
    assert listed == {"00000000000000000000.json": -1 if store.kind == "local" else 8}
    tree = {e.location.relative_to(root).as_posix(): e.size for e in io.list_tree(root)}
    assert tree == {
        "_delta_log/00000000000000000000.json": 8,
        "_delta_log/.hidden": 1,
        "_delta_log/_sidecars/x.parquet": 1,
        "part-0.parquet": 10,
    }
    assert io.new_input(root / "_delta_log/00000000000000000000.json").read() == b'{"a":1}\n'
    part = io.new_input(root / "part-0.parquet")
    assert part.read_tail(4) == (b"6789", 10)
    assert part.read_tail(100) == (b"0123456789", 10)
    assert part.read_range(2, 3) == b"234"
    assert len(part) == 10
    assert io.new_input(root / "_delta_log").exists() and not io.new_input(root / "nothing").exists()
    # a missing one is no error; S3 reports a missing key as deleted, the others count what existed
    deleted = io.delete([root / "part-0.parquet", root / "gone.parquet"])
    assert deleted == (2 if store.kind == "s3a" else 1)
    assert not part.exists()
    assert f"{where.key}/part-0.parquet" not in where.digest()
    with pytest.raises(FileNotFoundError):
        io.new_input(root / "missing").read()
    assert io.is_directory(root / "_delta_log") and not io.is_directory(root / "nothing")
    assert not io.is_directory(root / "_delta_log/00000000000000000000.json")


def test_deleting_the_last_object_of_a_prefix_leaves_no_directory_marker(s3_env: Any, bucket: str) -> None:
    root = obj(f"s3a://{bucket}/t")
    io = storage.io_for(root)
    io.new_output(root / "_delta_log/00000000000000000000.json").write(b"{}\n")
    before = s3_env.bucket_digest(bucket)
    written = [root / "ab/part-0.parquet", root / "cd/part-1.parquet", root / "part=x/part-2.parquet"]
    for p in written:
        io.new_output(p).write(b"data")
    mark = s3_env.request_mark()
    assert io.delete(written) == 3
    assert s3_env.bucket_digest(bucket) == before  # no "t/ab/" marker objects left behind
    deletes = [r for r in s3_env.requests_since(mark) if r[0] == "POST" and "delete" in r[1]]
    assert len(deletes) == 1  # one batch request


def test_missing_objects_and_directories_raise_file_not_found(s3_env: Any, bucket: str) -> None:
    root = obj(f"s3://{bucket}/none")
    io = storage.io_for(root)
    with pytest.raises(FileNotFoundError):
        io.list_files(root / "_delta_log")
    with pytest.raises(FileNotFoundError):
        io.new_input(root / "x.json").read()
    with pytest.raises(FileNotFoundError):
        io.new_input(root / "x.parquet").read_tail(10)


def test_create_if_absent_lets_exactly_one_of_many_concurrent_writers_win(
    store: Store, request: pytest.FixtureRequest
) -> None:
    if store.kind != "s3a":
        _race_creates(parse_location(f"{store('t').uri}/metadata/v1.metadata.json"))
        return
    # S3 decides conditional creates one at a time: the race runs on the one-request-at-a-time server
    serial = request.getfixturevalue("serial_env")
    bucket = serial.new_bucket()
    with serial.routed(bucket):  # a running Spark session's s3a settings point at the shared server
        _race_creates(obj(f"s3a://{bucket}/t/metadata/v1.metadata.json"))


def _race_creates(target: Location) -> None:
    io = storage.io_for(target)
    results: dict[int, bool] = {}
    barrier = threading.Barrier(6)

    def attempt(i: int) -> None:
        barrier.wait()
        results[i] = io.new_output(target).create(f"writer {i}".encode())

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(winners) == 1
    assert io.new_input(target).read() == f"writer {winners[0]}".encode()
    assert io.new_output(target).create(b"late") is False
    assert io.new_input(target).read() == f"writer {winners[0]}".encode()


def test_create_if_absent_names_the_missing_extra(
    s3_env: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setitem(__import__("sys").modules, "boto3", None)  # as if boto3 were not installed
        with pytest.raises(SetupError, match=r"icecompat_writer\[s3\]"):
            storage.io_for(f"s3a://{bucket}/t").new_output(f"s3a://{bucket}/t/x").create(b"x")
    assert s3_env.bucket_digest(bucket) == {}


def test_local_create_if_absent_and_regular_file_guard(tmp_path: Path) -> None:
    target = tmp_path / "metadata" / "v1.metadata.json"
    io = storage.io_for(tmp_path)
    assert io.new_output(target).create(b"one") is True
    assert io.new_output(target).create(b"two") is False
    assert target.read_bytes() == b"one"
    assert sorted(p.name for p in target.parent.iterdir()) == ["v1.metadata.json"]  # no temporary left
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="named pipe"):
        io.new_input(fifo).read()
    with pytest.raises(NotRegularFileError, match="named pipe"):
        io.new_input(fifo).read_tail(8)
    assert [e.name for e in io.list_files(tmp_path)] == []  # a pipe is not listed as a file


def test_credentials_come_from_the_environment_and_wrong_ones_are_refused(s3_env: Any, bucket: str) -> None:
    """In a process without Spark (the CLI's case) the environment decides; a test process may hold
    the run's Spark session, whose Hadoop settings would come first, so this runs in a new one."""
    storage.io_for(f"s3a://{bucket}").new_output(f"s3a://{bucket}/k").write(b"v")
    script = (
        "import sys\n"
        "from icecompat_writer import storage\n"
        "try:\n"
        f"    print(storage.io_for('s3a://{bucket}').new_input('s3a://{bucket}/k').read().decode())\n"
        "except OSError as e:\n"
        "    print('OSError', type(e).__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:9"  # the S3-specific variable wins over AWS_ENDPOINT_URL
    run = [sys.executable, "-c", script]
    wrong = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert wrong.stdout.startswith("OSError"), wrong.stdout + wrong.stderr[-2000:]
    env["AWS_ENDPOINT_URL_S3"] = s3_env.endpoint
    right = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
    assert right.stdout.strip() == "v", right.stdout + right.stderr[-2000:]


def test_map_bounded_keeps_order_and_bounds_threads() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def work(i: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        threading.Event().wait(0.01)
        with lock:
            active -= 1
        return i * i

    assert list(storage.map_bounded(work, list(range(40)), workers=4)) == [i * i for i in range(40)]
    assert 1 < peak <= 4


def test_local_directories_are_made_once_and_removed_only_when_empty(tmp_path: Path) -> None:
    meta = tmp_path / "metadata"
    io = storage.io_for(tmp_path)
    assert io.make_directory(meta) is True
    assert io.make_directory(meta) is False  # there already: not this call's to remove
    (meta / "v1.metadata.json").write_bytes(b"{}")
    assert io.remove_empty_directory(meta) is False and meta.is_dir()
    (meta / "v1.metadata.json").unlink()
    assert io.remove_empty_directory(meta) is True and not meta.exists()
    (tmp_path / "taken").write_bytes(b"x")
    with pytest.raises(FileExistsError):
        io.make_directory(tmp_path / "taken")
    # an object store has no directories: nothing to make, nothing to remove
    remote = storage.io_for("s3a://bkt/t")
    assert remote.make_directory(ObjectPath("s3a", "bkt", "t/metadata")) is False
    assert remote.remove_empty_directory(ObjectPath("s3a", "bkt", "t/metadata")) is False


def test_input_and_output_files_of_one_fileio(tmp_path: Path) -> None:
    io = storage.io_for(tmp_path)
    out = io.new_output(tmp_path / "a" / "f.bin")
    out.write(b"0123456789")
    assert out.create(b"other") is False
    f = out.to_input_file()
    assert len(f) == 10 and f.exists()
    assert f.read() == b"0123456789"
    assert f.read_tail(4) == (b"6789", 10)
    assert f.read_range(2, 3) == b"234"
    assert io.new_input(str(tmp_path / "a" / "f.bin")).read() == b"0123456789"  # a path as text
    assert not io.new_input(tmp_path / "nothing").exists()
    with pytest.raises(FileNotFoundError):
        len(io.new_input(tmp_path / "nothing"))
    assert io.delete([tmp_path / "a" / "f.bin", tmp_path / "gone"]) == 1


def test_a_fileio_answers_what_its_readers_would_otherwise_ask_of_the_location_type(tmp_path: Path) -> None:
    """Readers above the storage layer ask the FileIO, never the location's type: whether a location
    costs a request, whether a link leads out of a root, and a location relative to its root."""
    io = storage.io_for(tmp_path)
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "d" / "f.bin").write_bytes(b"x")
    (root / "link").symlink_to(outside)
    remote_root = obj("s3a://bkt/t")
    remote = storage.io_for(remote_root)
    assert not io.remote and remote.remote
    assert not io.escapes(root, root / "d" / "f.bin")
    assert io.escapes(root, root / "link" / "f.bin")
    assert not remote.escapes(remote_root, remote_root / "link" / "f.bin")  # an object store has no links
    assert storage.relative_text(root / "d" / "f.bin", root) == "d/f.bin"
    assert storage.relative_text(remote_root / "d" / "f.bin", remote_root) == "d/f.bin"
    assert storage.relative_text(tmp_path / "x", root) is None
    assert storage.relative_text(obj("s3a://other/t/x"), remote_root) is None
    assert storage.relative_text(root / "x", remote_root) is None
    assert storage.relative_text(remote_root / "x", root) is None


def test_a_fileio_resolves_links_only_where_a_store_has_them(tmp_path: Path) -> None:
    io = storage.io_for(tmp_path)
    real = tmp_path / "real"
    (real / "d").mkdir(parents=True)
    (real / "d" / "f").write_bytes(b"x")
    (real / "d" / "to-f").symlink_to(real / "d" / "f")
    (tmp_path / "alias").symlink_to(real)
    dirs: dict[str, str] = {}
    assert io.resolved(tmp_path / "alias" / "d" / "f") == str(real / "d" / "f")
    assert io.resolved(tmp_path / "alias" / "d" / "f", dirs) == str(real / "d" / "f")
    assert dirs == {str(tmp_path / "alias" / "d"): str(real / "d")}  # one resolution per directory
    assert io.resolved(tmp_path / "alias" / "d" / "to-f", dirs) == str(real / "d" / "f")  # a linked file
    assert storage.io_for("s3a://bkt/t").resolved(obj("s3a://bkt/t/x")) == "s3a://bkt/t/x"


def test_a_new_tables_directories_are_pruned_up_to_the_first_it_made(tmp_path: Path) -> None:
    io = storage.io_for(tmp_path)
    remote = storage.io_for("s3a://bkt/t")
    root = tmp_path / "new" / "t"
    assert io.missing_ancestor(root) == tmp_path / "new"
    assert io.missing_ancestor(tmp_path) is None
    assert remote.missing_ancestor(obj("s3a://bkt/t")) is None  # an object store makes no directories
    (root / "p=1" / "q=2").mkdir(parents=True)
    (root / "kept").mkdir()
    (root / "kept" / "other-write.parquet").write_bytes(b"x")
    (root / "empty").mkdir()
    files = [root / "p=1" / "q=2" / "f.parquet"]
    assert io.prune_empty_directories(root, files) == 2  # q=2, then p=1; the root is not this call's
    assert root.is_dir() and (root / "empty").is_dir()
    assert io.prune_empty_directories(root, [], whole_tree=True, up_to=tmp_path / "new") == 1  # "empty"
    assert (root / "kept" / "other-write.parquet").exists() and root.is_dir()  # not empty: kept
    (root / "kept" / "other-write.parquet").unlink()
    assert io.prune_empty_directories(root, [], whole_tree=True, up_to=tmp_path / "new") == 3
    assert not (tmp_path / "new").exists() and tmp_path.is_dir()
    remote_root = obj("s3a://bkt/t")
    assert remote.prune_empty_directories(remote_root, [remote_root / "p=1/f"], whole_tree=True) == 0


def test_list_from_lists_only_the_names_after_the_key(store: Store) -> None:
    """Delta's ``listFrom``: S3 asks the store from the key on (``StartAfter``), Azure and local disk
    filter one listing; every store answers the same names, in order."""
    where = store("t")
    log = parse_location(where.uri) / "_delta_log"
    io = storage.io_for(where.uri)
    names = ["00000000000000000001.json", "00000000000000000002.crc", "00000000000000000002.json", "_x"]
    for name in names:
        io.new_output(log / name).write(b"{}")
    io.new_output(log / "_sidecars/00000000000000000003.parquet").write(b"y")  # not in this directory
    io.new_output(log / ".00000000000000000004.json.crc").write(b"z")  # a hidden file is not listed
    listed = io.list_from(log, "00000000000000000001.~")
    assert [e.name for e in listed] == names[1:]
    assert all(e.size == (-1 if store.kind == "local" else 2) for e in listed)
    assert [e.name for e in io.list_from(log, "")] == names
    assert io.list_from(log, "~") == []
    with pytest.raises(FileNotFoundError):
        io.list_from(parse_location(where.uri) / "missing", "")


def test_a_tables_fileio_is_chosen_by_its_root_and_reaches_only_its_store(tmp_path: Path) -> None:
    """:func:`io_for` decides once, from the root, which FileIO reaches the table; a location of the
    other kind is refused (a table's files all live in its own store), and so is a scheme no store
    serves."""
    local, remote = storage.io_for(tmp_path), storage.io_for("s3a://bkt/t")
    assert isinstance(local, storage.LocalFileIO) and isinstance(remote, storage.ObjectStoreFileIO)
    assert isinstance(storage.io_for(f"file://{tmp_path}"), storage.LocalFileIO)
    for uri in (
        "gs://b/t",
        "abfss://c@acct.dfs.core.windows.net/t",
        "wasbs://c@acct.blob.core.windows.net/t",
    ):
        assert isinstance(storage.io_for(uri), storage.ObjectStoreFileIO)
    with pytest.raises(ValueError, match="not a local path"):
        local.new_input("s3a://bkt/t/x")
    with pytest.raises(ValueError, match="is a local path"):
        remote.new_output(tmp_path / "x")
    with pytest.raises(storage.UnsupportedSchemeError):
        storage.io_for("hdfs://nn/t")
