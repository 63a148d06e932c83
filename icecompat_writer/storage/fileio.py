"""``FileIO``: one object that reaches a table's files, with the store settings it was built with.

In pyiceberg's manner (``pyiceberg.io``): a :class:`FileIO` is built once at an edge, from a Spark
session's Hadoop settings (``FileIO(hadoop=...)``, what the session guard's driver hands over) or from
this process's own sources (``FileIO()``: the running session the edge installed in
:mod:`icecompat_writer.driver_settings`, else the environment), and handed down. It gives an
:class:`InputFile` or an :class:`OutputFile` per location; whether a location is local or in an
object store is decided once, when the file object is made, and every operation after that is the
one its kind needs. Request costs on an object store are those :mod:`.ops` lists.

The module-level functions of :mod:`.ops` are this object's operations with the default settings.
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from . import local
from .conditional import create_object_if_absent, delete_objects, get_object
from .config import StoreOptions, resolve_options
from .filesystems import filesystem, options_for
from .uri import Location, ObjectPath, parse_location

__all__ = ["FileEntry", "FileIO", "InputFile", "OutputFile", "missing"]


def missing(path: ObjectPath, kind: str = "does not exist") -> FileNotFoundError:
    """The error an absent object raises: the same ``FileNotFoundError`` a local file raises."""
    return FileNotFoundError(2, f"{path} {kind}", str(path))


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


class InputFile(ABC):
    """A file to read: its size, whether it exists, all of it or a byte range of it."""

    def __init__(self, location: Location) -> None:
        self.location = location

    @abstractmethod
    def __len__(self) -> int:
        """Size in bytes (``FileNotFoundError`` when missing); only a regular file has one."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether a file or directory (a prefix with objects under it) exists here."""

    @abstractmethod
    def read(self) -> bytes:
        """The whole file. A local file must be a regular file (:class:`~.local.NotRegularFileError`)."""

    @abstractmethod
    def read_tail(self, length: int) -> tuple[bytes, int]:
        """The last ``length`` bytes (all of the file when shorter) and the file's size."""

    @abstractmethod
    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset``."""

    @abstractmethod
    def mtime_ms(self) -> int:
        """Last modification time in milliseconds since the epoch (``FileNotFoundError`` when missing)."""

    @abstractmethod
    def parquet_source(self) -> Any:
        """What ``pyarrow.parquet.ParquetFile`` opens for this file."""

    @abstractmethod
    def parquet_metadata(self) -> Any:
        """The Parquet ``FileMetaData`` of this file, read by pyarrow."""


class OutputFile(ABC):
    """A file to write whole: replaced, or created only where nothing is."""

    def __init__(self, location: Location) -> None:
        self.location = location

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Write (or replace) the whole file."""

    @abstractmethod
    def create(self, data: bytes) -> bool:
        """Create the file holding ``data`` only if nothing is there; False (nothing written) if it is.

        Of two callers racing for one name exactly one gets True, on every store: a local ``link``,
        S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match: *``.
        """

    @abstractmethod
    def to_input_file(self) -> InputFile:
        """The same location, to read."""


class FileIO:
    """Reaches local files and object stores with one set of store settings.

    ``hadoop``: a Spark session's Hadoop settings (object-store keys), used before the environment;
    None: the running session's settings, else the environment.
    The values stay in this object's memory; they are never written or logged.
    """

    def __init__(self, hadoop: Mapping[str, str] | None = None) -> None:
        self._hadoop = dict(hadoop) if hadoop is not None else None

    def is_remote(self, location: Location) -> bool:
        """Whether each access to ``location`` is a request to a store (an object store), not a local
        system call: a reader then trusts one listing over probing names, and the location has no
        links, named pipes or devices to guard against."""
        return not isinstance(location, Path)

    def escapes(self, root: Location, location: Location) -> bool:
        """Whether ``location``, lexically inside ``root``, reaches outside it through a symbolic link
        (a local concern only: an object store has no links)."""
        if not isinstance(location, Path) or not isinstance(root, Path):
            return False
        real_root = os.path.realpath(root).rstrip("/") + "/"
        return not os.path.realpath(location).startswith(real_root)

    def options(self, path: ObjectPath) -> StoreOptions:
        """The resolved store options of ``path``'s bucket (container)."""
        if self._hadoop is not None:
            return resolve_options(path, self._hadoop)
        return options_for(path)

    def filesystem(self, path: ObjectPath) -> pafs.FileSystem:
        """The pyarrow filesystem that reaches ``path``'s bucket with these settings (cached by options)."""
        return filesystem(path, self.options(path))

    def new_input(self, location: str | os.PathLike[str] | Location, size: int | None = None) -> InputFile:
        """The file at ``location`` to read; ``size``, when a listing gave it, saves asking for it."""
        loc = _location(location)
        if isinstance(loc, Path):
            return _LocalInput(loc)
        return _ObjectInput(loc, self, size)

    def new_output(self, location: str | os.PathLike[str] | Location) -> OutputFile:
        loc = _location(location)
        if isinstance(loc, Path):
            return _LocalOutput(loc)
        return _ObjectOutput(loc, self)

    def list_files(self, directory: Location) -> list[FileEntry]:
        """The regular files directly inside ``directory`` (names starting with ``.`` left out).

        ``FileNotFoundError`` when the directory does not exist, ``NotADirectoryError`` when it is a
        file. Local entries carry no size (one ``scandir``, no ``stat`` per log file).
        """
        if isinstance(directory, Path):
            out: list[FileEntry] = []
            with os.scandir(directory) as it:
                for entry in it:
                    if entry.name.startswith(".") or not entry.is_file():
                        continue
                    out.append(FileEntry(Path(entry.path), -1))
            return out
        infos = self._list(directory, recursive=False)
        return [
            FileEntry(directory.with_fs_path(i.path), int(i.size or 0))
            for i in infos
            if i.type == pafs.FileType.File and not i.base_name.startswith(".")
        ]

    def list_tree(self, directory: Location) -> list[FileEntry]:
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
        infos = self._list(directory, recursive=True)
        return [
            FileEntry(directory.with_fs_path(i.path), int(i.size or 0))
            for i in infos
            if i.type == pafs.FileType.File
        ]

    def _list(self, directory: ObjectPath, *, recursive: bool) -> list[pafs.FileInfo]:
        fs = self.filesystem(directory)
        try:
            return list(fs.get_file_info(pafs.FileSelector(directory.fs_path, recursive=recursive)))
        except FileNotFoundError:
            raise missing(directory) from None
        except OSError as e:
            if "not a directory" in str(e).lower():
                raise NotADirectoryError(20, f"{directory} is not a directory", str(directory)) from None
            raise

    def make_directory(self, location: Location) -> bool:
        """Make the directory ``location`` (its parents must exist): True when this call made it.

        An object store has no directories (a prefix exists once an object is under it): nothing to
        make, False."""
        if not isinstance(location, Path):
            return False
        try:
            location.mkdir()
        except FileExistsError:
            if not location.is_dir():  # a file (or a dangling link) holds the name
                raise
            return False
        return True

    def remove_empty_directory(self, location: Location) -> bool:
        """Remove the directory ``location`` if it holds nothing: True when removed (object stores:
        False, a prefix with nothing under it is gone by itself)."""
        if not isinstance(location, Path) or any(location.iterdir()):
            return False
        location.rmdir()
        return True

    def delete(self, locations: Iterable[Location]) -> int:
        """Delete each file that exists; how many were deleted. Missing files are skipped, not errors.

        A local file written through Hadoop has a checksum sibling (``.<name>.crc``) that Hadoop's
        local filesystem keeps as part of the file; it goes with the file. Objects are deleted through
        the cloud's SDK (:func:`~.conditional.delete_objects`: pyarrow would leave directory markers).
        """
        deleted = 0
        remote: dict[tuple[str, str], list[ObjectPath]] = {}
        for p in locations:
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
            deleted += delete_objects(group, self.options(group[0]))
        return deleted


def _location(location: str | os.PathLike[str] | Location) -> Location:
    """A location as given when it is one already (a path is taken as it is), else parsed."""
    if isinstance(location, Path | ObjectPath):
        return location
    return parse_location(location)


class _LocalInput(InputFile):
    location: Path

    def __len__(self) -> int:
        st = os.stat(self.location)
        if not stat.S_ISREG(st.st_mode):
            raise local.NotRegularFileError(self.location, st.st_mode)
        return st.st_size

    def exists(self) -> bool:
        return self.location.exists()

    def read(self) -> bytes:
        return local.read_bytes(self.location)

    def read_tail(self, length: int) -> tuple[bytes, int]:
        return local.read_tail(self.location, length)

    def read_range(self, offset: int, length: int) -> bytes:
        with local.open_regular_file(self.location) as fh:
            fh.seek(offset)
            return fh.read(length)

    def mtime_ms(self) -> int:
        return int(self.location.stat().st_mtime * 1000)

    def parquet_source(self) -> Any:
        """A checked local path (pyarrow opens it itself)."""
        local.check_regular_file(self.location)
        return self.location

    def parquet_metadata(self) -> Any:
        return pq.read_metadata(self.parquet_source())


class _ObjectInput(InputFile):
    location: ObjectPath

    def __init__(self, location: ObjectPath, io: FileIO, size: int | None) -> None:
        super().__init__(location)
        self._io = io
        self._size = size

    def _info(self) -> pafs.FileInfo:
        return self._io.filesystem(self.location).get_file_info(self.location.fs_path)

    def _open(self) -> Any:
        try:
            return self._io.filesystem(self.location).open_input_file(self.location.fs_path)
        except FileNotFoundError:
            raise missing(self.location) from None
        except IsADirectoryError:
            raise local.NotRegularFileError(str(self.location), 0o040000) from None

    def __len__(self) -> int:
        if self._size is not None:
            return self._size
        info = self._info()
        if info.type == pafs.FileType.NotFound:
            raise missing(self.location)
        if info.type != pafs.FileType.File:
            raise local.NotRegularFileError(str(self.location), 0o040000)
        return int(info.size or 0)

    def exists(self) -> bool:
        return bool(self._info().type != pafs.FileType.NotFound)

    def read(self) -> bytes:
        data = get_object(self.location, self._io.options(self.location))  # S3: one GET, no HEAD
        if data is not None:
            return data
        with self._open() as fh:
            return bytes(fh.read())

    def read_tail(self, length: int) -> tuple[bytes, int]:
        with self._open() as fh:
            size = int(fh.size())
            start = max(0, size - length)
            return bytes(fh.read_at(size - start, start)), size

    def read_range(self, offset: int, length: int) -> bytes:
        with self._open() as fh:
            return bytes(fh.read_at(length, offset))

    def mtime_ms(self) -> int:
        info = self._info()
        if info.type == pafs.FileType.NotFound or info.mtime_ns is None:
            raise missing(self.location)
        return int(info.mtime_ns // 1_000_000)

    def parquet_source(self) -> Any:
        """The object's bytes in memory (one GET; pyarrow would otherwise issue a ranged GET per
        column chunk)."""
        return pa.BufferReader(self.read())

    def parquet_metadata(self) -> Any:
        """The ``FileMetaData`` of a Parquet object whose size a listing gave: one ranged GET, no HEAD.

        pyarrow's dataset fragments take the file size, so the reader fetches the last 64 KiB (and
        only a longer footer again) without asking the store for the size first.
        """
        import pyarrow.dataset as ds  # loaded by the one reader that needs it (the module is large)

        fragment = ds.ParquetFileFormat().make_fragment(
            self.location.fs_path, filesystem=self._io.filesystem(self.location), file_size=len(self)
        )
        try:
            fragment.ensure_complete_metadata()
        except FileNotFoundError:
            raise missing(self.location) from None
        return fragment.metadata


class _LocalOutput(OutputFile):
    location: Path

    def write(self, data: bytes) -> None:
        """Temporary file + rename: a reader never sees a partial file."""
        local.write_bytes(self.location, data)

    def create(self, data: bytes) -> bool:
        return local.create_if_absent(self.location, data)

    def to_input_file(self) -> InputFile:
        return _LocalInput(self.location)


class _ObjectOutput(OutputFile):
    location: ObjectPath

    def __init__(self, location: ObjectPath, io: FileIO) -> None:
        super().__init__(location)
        self._io = io

    def write(self, data: bytes) -> None:
        """One PUT."""
        with self._io.filesystem(self.location).open_output_stream(self.location.fs_path) as out:
            out.write(data)

    def create(self, data: bytes) -> bool:
        return create_object_if_absent(self.location, data, self._io.options(self.location))

    def to_input_file(self) -> InputFile:
        return _ObjectInput(self.location, self._io, None)
