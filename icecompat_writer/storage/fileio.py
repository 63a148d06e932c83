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
from .conditional import create_object_if_absent, delete_objects, get_object, list_objects_after
from .config import StoreOptions, endpoint_parts, resolve_options
from .filesystems import filesystem, options_for
from .uri import Location, ObjectPath, parse_location

__all__ = ["FileEntry", "FileIO", "InputFile", "OutputFile", "missing"]

# store option -> the pyiceberg FileIO property that carries it, per store family
_PYICEBERG_NAMES: dict[str, dict[str, str]] = {
    "s3": {
        "access_key": "s3.access-key-id",
        "secret_key": "s3.secret-access-key",
        "session_token": "s3.session-token",
        "region": "s3.region",
    },
    "azure": {
        "account_key": "adls.account-key",
        "sas_token": "adls.sas-token",
        "connection_string": "adls.connection-string",
        "client_id": "adls.client-id",
        "client_secret": "adls.client-secret",
        "tenant_id": "adls.tenant-id",
    },
    "gcs": {"project_id": "gcs.project-id", "endpoint": "gcs.service.host"},
}


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
    mtime_ms: int = -1  # last modification, ms since the epoch; :meth:`FileIO.list_tree` fills it

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

    def resolved(self, location: Location, dirs: dict[str, str] | None = None) -> str:
        """Where ``location`` really is, as text: a local path with its symbolic links resolved, an
        object's URI as it is (an object store has no links).

        ``dirs`` (directory -> its resolved path) lets a caller resolving many files resolve each
        directory once; the file itself is still checked for being a link.
        """
        if not isinstance(location, Path):
            return location.uri
        if dirs is None:
            return os.path.realpath(location)
        parent = str(location.parent)
        real_dir = dirs.get(parent)
        if real_dir is None:
            real_dir = dirs[parent] = os.path.realpath(parent)
        real = os.path.join(real_dir, location.name)
        return os.path.realpath(real) if os.path.islink(real) else real

    def is_directory(self, location: Location) -> bool:
        """Whether ``location`` is a directory (on an object store: a prefix with objects under it,
        which costs a request)."""
        if isinstance(location, Path):
            return location.is_dir()
        info = self.filesystem(location).get_file_info(location.fs_path)
        return bool(info.type == pafs.FileType.Directory)

    def missing_ancestor(self, location: Location) -> Location | None:
        """The outermost directory on the way to ``location`` (itself included) that does not exist
        yet: what a writer creating ``location`` makes, and may remove again. None when it exists,
        and on an object store (it has no directories to make or remove)."""
        if not isinstance(location, Path) or location.exists():
            return None
        missing = location
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        return missing

    def prune_empty_directories(
        self,
        root: Location,
        files: Iterable[Location],
        *,
        whole_tree: bool = False,
        up_to: Location | None = None,
    ) -> int:
        """Remove the directories between each of ``files`` (deleted before) and ``root`` that are
        empty, deepest first; how many were removed. Only empty ones go (``rmdir`` refuses any other).

        ``whole_tree``: every empty directory under ``root`` as well. ``up_to``: ``root`` and its
        parents up to ``up_to`` (one of them) too, while they are empty. An object store has no
        directories (a prefix goes with its last object): nothing to do, 0.
        """
        if not isinstance(root, Path):
            return 0
        dirs: set[Path] = set()
        for f in files:
            if not isinstance(f, Path):
                continue
            d = f.parent
            while d != root and root in d.parents:
                dirs.add(d)
                d = d.parent
        if whole_tree:
            for current, subdirs, _files in os.walk(root):
                dirs.update(Path(current) / s for s in subdirs)
        removed = 0
        for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
            try:
                d.rmdir()
                removed += 1
            except OSError:
                pass  # not empty (another write's files), or already gone
        if up_to is not None:
            d = root
            while True:
                try:
                    d.rmdir()
                    removed += 1
                except OSError:
                    break
                if d == up_to:
                    break
                d = d.parent
        return removed

    def options(self, path: ObjectPath) -> StoreOptions:
        """The resolved store options of ``path``'s bucket (container)."""
        if self._hadoop is not None:
            return resolve_options(path, self._hadoop)
        return options_for(path)

    def iceberg_properties(self, location: Location) -> dict[str, str]:
        """pyiceberg FileIO properties (``s3.*``, ``adls.*``, ``gcs.*``) that reach ``location``'s
        store with these settings; empty for a local location, which needs none."""
        if not isinstance(location, ObjectPath):
            return {}
        options = self.options(location).as_dict()
        names = _PYICEBERG_NAMES.get(location.family, {})
        out = {names[k]: v for k, v in options.items() if k in names}
        if location.family == "s3" and options.get("endpoint"):
            ssl = str(options.get("ssl", "true")).strip().lower() not in {"false", "0", "no"}
            scheme, host = endpoint_parts(options["endpoint"], ssl_default=ssl)
            out["s3.endpoint"] = f"{scheme}://{host}"
            path_style = str(options.get("path_style", "")).strip().lower() in {"true", "1", "yes"}
            out["s3.force-virtual-addressing"] = "false" if path_style else "true"
        elif location.family == "azure" and location.account:
            out["adls.account-name"] = location.account
        return out

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

    def list_from(self, directory: Location, start_after: str) -> list[FileEntry]:
        """The regular files directly inside ``directory`` whose names sort after ``start_after``, in
        name order (Delta's ``listFrom``: a reader that knows where the log was need not list its past).

        On S3 one paginated ``ListObjectsV2`` with ``StartAfter`` (and on GCS ``list_blobs`` with
        ``start_offset``) asks the store only for the keys after it, so the cost follows what is new,
        not how long the directory is. Locally one ``scandir`` filtered by name (no ``stat``), and on
        Azure, whose listing has no start key, or without the cloud SDK, the full listing filtered
        the same way. Errors as :meth:`list_files`.
        """
        if not isinstance(directory, Path):
            infos = list_objects_after(directory, start_after, self.options(directory))
            if infos is not None:
                return sorted(
                    (FileEntry(directory / name, size) for name, size in infos if name > start_after),
                    key=lambda e: e.name,
                )
        return sorted((e for e in self.list_files(directory) if e.name > start_after), key=lambda e: e.name)

    def list_tree(self, directory: Location) -> list[FileEntry]:
        """Every file under ``directory``, at any depth (one paginated listing on an object store),
        with its size and modification time."""
        if isinstance(directory, Path):
            out: list[FileEntry] = []
            for current, _dirs, names in os.walk(directory):
                for name in names:
                    p = Path(current) / name
                    try:
                        st = p.stat()
                    except OSError:
                        continue
                    out.append(FileEntry(p, st.st_size, st.st_mtime_ns // 1_000_000))
            return out
        infos = self._list(directory, recursive=True)
        return [
            FileEntry(
                directory.with_fs_path(i.path),
                int(i.size or 0),
                -1 if i.mtime_ns is None else int(i.mtime_ns // 1_000_000),
            )
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
