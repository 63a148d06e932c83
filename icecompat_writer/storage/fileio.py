"""``FileIO``: what reaches a table's files, in pyiceberg's manner (``pyiceberg.io``).

:class:`FileIO` is abstract; one implementation per kind of store: :class:`~.local_io.LocalFileIO`
(plain ``os`` calls, with the guards a local disk needs) and :class:`~.object_io.ObjectStoreFileIO`
(S3, GCS and Azure through pyarrow and the clouds' SDKs, with the store settings it was built with).
Which one a table gets is decided once, from its root, by :func:`~.ops.io_for` at an edge (a write,
an upgrade, a check, a conversion, the command line, the rule service), and the object is handed
down: every reader and writer below the edges takes it as a required ``io``.

A FileIO hands out an :class:`InputFile` or an :class:`OutputFile` per location (``new_input``,
``new_output``), deletes, lists and, on a local disk, makes and removes the directories a writer
created. A location of the other kind (an object URI given to a local FileIO) is a ``ValueError``:
a table's files all live in its own store.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .uri import Location

__all__ = ["FileEntry", "FileIO", "InputFile", "OutputFile"]

PathLike = str | os.PathLike[str] | Location
"""What the methods take: a location, or its text (a path or URI, parsed)."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file a listing returned: where it is and its size in bytes.

    :meth:`FileIO.list_files` on local disk leaves ``size`` at -1 (one ``scandir``, no ``stat`` per
    log file: the log reader never needs it); object-store listings and :meth:`FileIO.list_tree`
    carry it.
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


class FileIO(ABC):
    """Reaches the files of one kind of store (see the module docstring)."""

    remote: bool
    """Whether each access is a request to a store (an object store), not a local system call: a
    reader then trusts one listing over probing names, and there are no links, named pipes or
    devices to guard against."""

    @abstractmethod
    def new_input(self, location: PathLike, size: int | None = None) -> InputFile:
        """The file at ``location`` to read; ``size``, when a listing gave it, saves asking for it."""

    @abstractmethod
    def new_output(self, location: PathLike) -> OutputFile:
        """The file at ``location`` to write."""

    @abstractmethod
    def delete(self, locations: Iterable[PathLike]) -> int:
        """Delete each file that exists; how many were deleted. Missing files are skipped, not errors."""

    @abstractmethod
    def list_files(self, directory: PathLike) -> list[FileEntry]:
        """The regular files directly inside ``directory`` (names starting with ``.`` left out).

        ``FileNotFoundError`` when the directory does not exist, ``NotADirectoryError`` when it is a
        file.
        """

    def list_from(self, directory: PathLike, start_after: str) -> list[FileEntry]:
        """The regular files directly inside ``directory`` whose names sort after ``start_after``, in
        name order (Delta's ``listFrom``: a reader that knows where the log was need not list its
        past). Here: the full listing filtered by name; a store that can start a listing at a key
        does so. Errors as :meth:`list_files`."""
        return sorted((e for e in self.list_files(directory) if e.name > start_after), key=lambda e: e.name)

    @abstractmethod
    def list_tree(self, directory: PathLike) -> list[FileEntry]:
        """Every file under ``directory``, at any depth, with its size and modification time."""

    @abstractmethod
    def is_directory(self, location: PathLike) -> bool:
        """Whether ``location`` is a directory (on an object store: a prefix with objects under it,
        which costs a request)."""

    @abstractmethod
    def make_directory(self, location: PathLike) -> bool:
        """Make the directory ``location`` (its parents must exist): True when this call made it."""

    @abstractmethod
    def remove_empty_directory(self, location: PathLike) -> bool:
        """Remove the directory ``location`` if it holds nothing: True when removed."""

    @abstractmethod
    def missing_ancestor(self, location: PathLike) -> Location | None:
        """The outermost directory on the way to ``location`` (itself included) that does not exist
        yet: what a writer creating ``location`` makes, and may remove again. None when it exists."""

    @abstractmethod
    def prune_empty_directories(
        self,
        root: PathLike,
        files: Iterable[PathLike],
        *,
        whole_tree: bool = False,
        up_to: PathLike | None = None,
    ) -> int:
        """Remove the directories between each of ``files`` (deleted before) and ``root`` that are
        empty, deepest first; how many were removed. Only empty ones go.

        ``whole_tree``: every empty directory under ``root`` as well. ``up_to``: ``root`` and its
        parents up to ``up_to`` (one of them) too, while they are empty.
        """

    @abstractmethod
    def resolved(self, location: PathLike, dirs: dict[str, str] | None = None) -> str:
        """Where ``location`` really is, as text (a local path with its symbolic links resolved).

        ``dirs`` (directory -> its resolved path) lets a caller resolving many files resolve each
        directory once.
        """

    @abstractmethod
    def escapes(self, root: PathLike, location: PathLike) -> bool:
        """Whether ``location``, lexically inside ``root``, reaches outside it through a symbolic link."""

    @abstractmethod
    def iceberg_properties(self, location: PathLike) -> dict[str, str]:
        """pyiceberg FileIO properties (``s3.*``, ``adls.*``, ``gcs.*``) that reach ``location``'s
        store with these settings; empty where none are needed."""
