"""The operations on a table's files, each working on a local path or an object-store path.

Each is the operation of :data:`DEFAULT_IO` (:class:`~.fileio.FileIO`) on the file at that path:
local paths use plain ``os`` calls (:mod:`.local`), object-store paths the pyarrow filesystem of
their store (:mod:`.filesystems`). Request costs on an object store, the reason for each shape:

* :func:`list_files` / :func:`list_tree`: one paginated LIST (1,000 keys a page), sizes included; a
  reader learns which files exist from the listing, never by probing names one by one;
* :func:`read_bytes`: one GET for the whole object (pyarrow asks its size first with one HEAD);
* :func:`read_tail`: one ranged GET of the last ``length`` bytes (after the same HEAD);
* :func:`read_parquet_metadata`: a Parquet footer whose object size a listing gave: one ranged GET of
  the last 64 KiB, no HEAD (a footer longer than that is read once more);
* :func:`create_if_absent`: one conditional PUT (see :mod:`.conditional`);
* :func:`delete_files`: one batch DELETE per 1,000 keys on S3, one DELETE per object elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .fileio import FileEntry, FileIO
from .uri import Location, ObjectPath

__all__ = [
    "DEFAULT_IO",
    "LOCAL_READERS",
    "LOCAL_SERIAL_MAX",
    "MAX_PARALLEL_READS",
    "FileEntry",
    "create_if_absent",
    "delete_files",
    "exists",
    "file_size",
    "footer_readers",
    "list_files",
    "list_tree",
    "make_directory",
    "map_bounded",
    "mtime_ms",
    "parquet_source",
    "read_bytes",
    "read_parquet_metadata",
    "read_range",
    "read_tail",
    "remove_empty_directory",
    "write_bytes",
]

MAX_PARALLEL_READS = 16
"""Upper bound of concurrent reads on an object store (footers): enough to hide request latency,
few enough not to be throttled or exhaust the client's connection pool."""
LOCAL_READERS = min(os.cpu_count() or 1, 4)
"""Threads reading local footers: a local footer is a few page-cache reads and mostly Python decoding
under the GIL, where 16 threads measured twice as slow as one."""
LOCAL_SERIAL_MAX = 32
"""Up to this many local footers are read in the calling thread, without a pool (about 1 ms each): in
a process that had just converted 100,000 files, starting a pool's two threads took 1.6 s."""


def footer_readers(io: FileIO, root: Location, count: int) -> int:
    """How many threads :func:`map_bounded` should use to read ``count`` footers under ``root``."""
    if io.is_remote(root):
        return MAX_PARALLEL_READS
    return LOCAL_READERS if count > LOCAL_SERIAL_MAX else 1

DEFAULT_IO = FileIO()
"""The FileIO of the module-level functions: the running session's settings (or those a driver
handed over for the request being served), else the environment."""

T = TypeVar("T")
R = TypeVar("R")


def list_files(directory: Location) -> list[FileEntry]:
    """The regular files directly inside ``directory`` (:meth:`.FileIO.list_files`)."""
    return DEFAULT_IO.list_files(directory)


def list_tree(directory: Location) -> list[FileEntry]:
    """Every file under ``directory``, at any depth (:meth:`.FileIO.list_tree`)."""
    return DEFAULT_IO.list_tree(directory)


def read_bytes(path: Location) -> bytes:
    """The whole file. Local files must be regular files (:class:`~.local.NotRegularFileError`)."""
    return DEFAULT_IO.new_input(path).read()


def read_tail(path: Location, length: int) -> tuple[bytes, int]:
    """The last ``length`` bytes (the whole file when shorter) and the file's size: one ranged read."""
    return DEFAULT_IO.new_input(path).read_tail(length)


def read_range(path: Location, offset: int, length: int) -> bytes:
    """``length`` bytes from ``offset``: one ranged read."""
    return DEFAULT_IO.new_input(path).read_range(offset, length)


def read_parquet_metadata(path: ObjectPath, size: int) -> Any:
    """The ``FileMetaData`` of a Parquet object whose size a listing gave: one ranged GET, no HEAD."""
    return DEFAULT_IO.new_input(path, size).parquet_metadata()


def file_size(path: Location) -> int:
    """Size in bytes (``FileNotFoundError`` when missing); for local paths, of a regular file only."""
    return len(DEFAULT_IO.new_input(path))


def mtime_ms(path: Location) -> int:
    """Last modification time in milliseconds since the epoch (``FileNotFoundError`` when missing)."""
    return DEFAULT_IO.new_input(path).mtime_ms()


def exists(path: Location) -> bool:
    """Whether a file or directory (a prefix with objects under it) exists at ``path``."""
    return DEFAULT_IO.new_input(path).exists()


def parquet_source(path: Location) -> Any:
    """What ``pyarrow.parquet.ParquetFile`` opens for ``path``: a checked local path, or the object's
    bytes in memory (one GET; pyarrow would otherwise issue a ranged GET per column chunk)."""
    return DEFAULT_IO.new_input(path).parquet_source()


def write_bytes(path: Location, data: bytes) -> None:
    """Write (or replace) a whole file. Local: temporary file + rename; object store: one PUT."""
    DEFAULT_IO.new_output(path).write(data)


def create_if_absent(path: Location, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only if nothing is there; False (nothing written) when it is
    (:meth:`.OutputFile.create`)."""
    return DEFAULT_IO.new_output(path).create(data)


def make_directory(path: Location) -> bool:
    """Make a local directory (:meth:`.FileIO.make_directory`): True when this call made it."""
    return DEFAULT_IO.make_directory(path)


def remove_empty_directory(path: Location) -> bool:
    """Remove a local directory that holds nothing (:meth:`.FileIO.remove_empty_directory`)."""
    return DEFAULT_IO.remove_empty_directory(path)


def delete_files(paths: Iterable[Location]) -> int:
    """Delete each file that exists; how many were deleted (:meth:`.FileIO.delete`)."""
    return DEFAULT_IO.delete(paths)


def map_bounded(fn: Callable[[T], R], items: Sequence[T], workers: int = MAX_PARALLEL_READS) -> Iterator[R]:
    """``fn`` over ``items`` in a pool of at most ``workers`` threads, results in input order.

    pyarrow releases the GIL during requests, so threads overlap the latency of object-store reads.
    """
    if len(items) <= 1 or workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="icecompat-io") as pool:
        yield from pool.map(fn, items)
