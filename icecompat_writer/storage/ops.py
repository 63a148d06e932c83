"""The operations on a table's files, each working on a local path or an object-store path.

Local paths use plain ``os`` calls (:mod:`.local`); object-store paths use the pyarrow filesystem of
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from . import local
from .conditional import create_object_if_absent, delete_objects, get_object
from .filesystems import filesystem, options_for
from .uri import Location, ObjectPath

__all__ = [
    "MAX_PARALLEL_READS",
    "FileEntry",
    "create_if_absent",
    "delete_files",
    "exists",
    "file_size",
    "list_files",
    "list_tree",
    "map_bounded",
    "mtime_ms",
    "parquet_source",
    "read_bytes",
    "read_parquet_metadata",
    "read_range",
    "read_tail",
    "write_bytes",
]

MAX_PARALLEL_READS = 16
"""Upper bound of concurrent reads on an object store (footers): enough to hide request latency,
few enough not to be throttled or exhaust the client's connection pool."""

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file a listing returned: where it is and its size in bytes.

    :func:`list_files` on local disk leaves ``size`` at -1 (one ``scandir``, no ``stat`` per log
    file: the log reader never needs it); object-store listings and :func:`list_tree` carry it.
    """

    location: Location
    size: int

    @property
    def name(self) -> str:
        return self.location.name


def _missing(path: ObjectPath, kind: str = "does not exist") -> FileNotFoundError:
    return FileNotFoundError(2, f"{path} {kind}", str(path))


def list_files(directory: Location) -> list[FileEntry]:
    """The regular files directly inside ``directory`` (names starting with ``.`` left out).

    ``FileNotFoundError`` when the directory does not exist, ``NotADirectoryError`` when it is a file.
    """
    if isinstance(directory, Path):
        out: list[FileEntry] = []
        with os.scandir(directory) as it:
            for entry in it:
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                out.append(FileEntry(Path(entry.path), -1))
        return out
    infos = _list(directory, recursive=False)
    return [
        FileEntry(directory.with_fs_path(i.path), int(i.size or 0))
        for i in infos
        if i.type == pafs.FileType.File and not i.base_name.startswith(".")
    ]


def list_tree(directory: Location) -> list[FileEntry]:
    """Every file under ``directory``, at any depth (one paginated listing on an object store)."""
    if isinstance(directory, Path):
        out: list[FileEntry] = []
        for current, _dirs, names in os.walk(directory):
            for name in names:
                p = Path(current) / name
                try:
                    out.append(FileEntry(p, p.stat().st_size))
                except OSError:
                    continue
        return out
    infos = _list(directory, recursive=True)
    return [
        FileEntry(directory.with_fs_path(i.path), int(i.size or 0))
        for i in infos
        if i.type == pafs.FileType.File
    ]


def _list(directory: ObjectPath, *, recursive: bool) -> list[pafs.FileInfo]:
    fs = filesystem(directory)
    try:
        return list(fs.get_file_info(pafs.FileSelector(directory.fs_path, recursive=recursive)))
    except FileNotFoundError:
        raise _missing(directory) from None
    except OSError as e:
        if "not a directory" in str(e).lower():
            raise NotADirectoryError(20, f"{directory} is not a directory", str(directory)) from None
        raise


def _open(path: ObjectPath) -> Any:
    try:
        return filesystem(path).open_input_file(path.fs_path)
    except FileNotFoundError:
        raise _missing(path) from None
    except IsADirectoryError:
        raise local.NotRegularFileError(str(path), 0o040000) from None


def read_bytes(path: Location) -> bytes:
    """The whole file. Local files must be regular files (:class:`~.local.NotRegularFileError`)."""
    if isinstance(path, Path):
        return local.read_bytes(path)
    data = get_object(path, options_for(path))  # S3: one GET, where pyarrow would HEAD first
    if data is not None:
        return data
    with _open(path) as fh:
        return bytes(fh.read())


def read_tail(path: Location, length: int) -> tuple[bytes, int]:
    """The last ``length`` bytes (the whole file when shorter) and the file's size: one ranged read."""
    if isinstance(path, Path):
        return local.read_tail(path, length)
    with _open(path) as fh:
        size = int(fh.size())
        start = max(0, size - length)
        return bytes(fh.read_at(size - start, start)), size


def read_range(path: Location, offset: int, length: int) -> bytes:
    """``length`` bytes from ``offset``: one ranged read."""
    if isinstance(path, Path):
        with local.open_regular_file(path) as fh:
            fh.seek(offset)
            return fh.read(length)
    with _open(path) as fh:
        return bytes(fh.read_at(length, offset))


def read_parquet_metadata(path: ObjectPath, size: int) -> Any:
    """The ``FileMetaData`` of a Parquet object whose size a listing gave: one ranged GET, no HEAD.

    pyarrow's dataset fragments take the file size, so the reader fetches the last 64 KiB (and only a
    longer footer again) without asking the store for the size first; ``open_input_file`` cannot.
    """
    import pyarrow.dataset as ds

    fragment = ds.ParquetFileFormat().make_fragment(path.fs_path, filesystem=filesystem(path), file_size=size)
    try:
        fragment.ensure_complete_metadata()
    except FileNotFoundError:
        raise _missing(path) from None
    return fragment.metadata


def file_size(path: Location) -> int:
    """Size in bytes (``FileNotFoundError`` when missing); for local paths, of a regular file only."""
    if isinstance(path, Path):
        st = os.stat(path)
        import stat as _stat

        if not _stat.S_ISREG(st.st_mode):
            raise local.NotRegularFileError(path, st.st_mode)
        return st.st_size
    info = filesystem(path).get_file_info(path.fs_path)
    if info.type == pafs.FileType.NotFound:
        raise _missing(path)
    if info.type != pafs.FileType.File:
        raise local.NotRegularFileError(str(path), 0o040000)
    return int(info.size or 0)


def mtime_ms(path: Location) -> int:
    """Last modification time in milliseconds since the epoch (``FileNotFoundError`` when missing)."""
    if isinstance(path, Path):
        return int(path.stat().st_mtime * 1000)
    info = filesystem(path).get_file_info(path.fs_path)
    if info.type == pafs.FileType.NotFound or info.mtime_ns is None:
        raise _missing(path)
    return int(info.mtime_ns // 1_000_000)


def exists(path: Location) -> bool:
    """Whether a file or directory (a prefix with objects under it) exists at ``path``."""
    if isinstance(path, Path):
        return path.exists()
    return bool(filesystem(path).get_file_info(path.fs_path).type != pafs.FileType.NotFound)


def parquet_source(path: Location) -> Any:
    """What ``pyarrow.parquet.ParquetFile`` opens for ``path``: a checked local path, or the object's
    bytes in memory (one GET; pyarrow would otherwise issue a ranged GET per column chunk)."""
    if isinstance(path, Path):
        local.check_regular_file(path)
        return path
    return pa.BufferReader(read_bytes(path))


def write_bytes(path: Location, data: bytes) -> None:
    """Write (or replace) a whole file. Local: temporary file + rename; object store: one PUT."""
    if isinstance(path, Path):
        local.write_bytes(path, data)
        return
    with filesystem(path).open_output_stream(path.fs_path) as out:
        out.write(data)


def create_if_absent(path: Location, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only if nothing is there; False (nothing written) when it is.

    Of two callers racing for one name exactly one gets True, on every store: a local ``link``, S3
    ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match: *``.
    """
    if isinstance(path, Path):
        return local.create_if_absent(path, data)
    return create_object_if_absent(path, data, options_for(path))


def delete_files(paths: Iterable[Location]) -> int:
    """Delete each file that exists; how many were deleted. Missing files are skipped, not errors.

    A local file written through Hadoop has a checksum sibling (``.<name>.crc``) that Hadoop's local
    filesystem keeps as part of the file; it goes with the file. Objects are deleted through the
    cloud's SDK (:func:`~.conditional.delete_objects`: pyarrow would leave directory markers behind).
    """
    deleted = 0
    remote: dict[tuple[str, str], list[ObjectPath]] = {}
    for p in paths:
        if isinstance(p, Path):
            try:
                p.unlink()
                deleted += 1
            except FileNotFoundError:
                pass
            try:
                p.with_name(f".{p.name}.crc").unlink()
            except FileNotFoundError:
                pass
            continue
        remote.setdefault((p.family, p.authority), []).append(p)
    for group in remote.values():
        deleted += delete_objects(group, options_for(group[0]))
    return deleted


def map_bounded(fn: Callable[[T], R], items: Sequence[T], workers: int = MAX_PARALLEL_READS) -> Iterator[R]:
    """``fn`` over ``items`` in a pool of at most ``workers`` threads, results in input order.

    pyarrow releases the GIL during requests, so threads overlap the latency of object-store reads.
    """
    if len(items) <= 1 or workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="icecompat-io") as pool:
        yield from pool.map(fn, items)
