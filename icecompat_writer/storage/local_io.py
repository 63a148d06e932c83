"""``LocalFileIO``: a table on a local disk (or a mounted one), through plain ``os`` calls.

The fast path (:mod:`.local`): ``os.scandir`` and ``open`` are what the checker's 100,000-file
benchmark was tuned on, and every file is checked to be a regular file before a byte is read. Only a
local disk has directories to make and remove, symbolic links to resolve, and Hadoop's checksum
siblings (``.<name>.crc``) to delete with their files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from . import local
from .fileio import FileEntry, FileIO, InputFile, OutputFile, PathLike
from .uri import Location, parse_location

__all__ = ["LocalFileIO"]


def _path(location: PathLike) -> Path:
    """``location`` as a local path (a ``Path`` is taken as it is, text is parsed); ``ValueError``
    for an object-store location, which this FileIO cannot reach."""
    loc = location if isinstance(location, Path) else parse_location(location)
    if not isinstance(loc, Path):
        raise ValueError(f"{loc} is not a local path: a local table's files are all local")
    return loc


class LocalFileIO(FileIO):
    """Local files: no settings, no requests."""

    remote = False

    def new_input(self, location: PathLike, size: int | None = None) -> InputFile:
        return _LocalInput(_path(location))

    def new_output(self, location: PathLike) -> OutputFile:
        return _LocalOutput(_path(location))

    def delete(self, locations: Iterable[PathLike]) -> int:
        """Each file with its checksum sibling (``.<name>.crc``), which Hadoop's local filesystem
        writes with every file and keeps as part of it."""
        deleted = 0
        for p in map(_path, locations):
            try:
                p.unlink()
                deleted += 1
            except FileNotFoundError:
                pass
            try:
                p.with_name(f".{p.name}.crc").unlink()
            except FileNotFoundError:
                pass
        return deleted

    def list_files(self, directory: PathLike) -> list[FileEntry]:
        """One ``scandir``, no ``stat`` per file: the entries carry no size (-1)."""
        out: list[FileEntry] = []
        with os.scandir(_path(directory)) as it:
            for entry in it:
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                out.append(FileEntry(Path(entry.path), -1))
        return out

    def list_tree(self, directory: PathLike) -> list[FileEntry]:
        out: list[FileEntry] = []
        for current, _dirs, names in os.walk(_path(directory)):
            for name in names:
                p = Path(current) / name
                try:
                    st = p.stat()
                except OSError:
                    continue
                out.append(FileEntry(p, st.st_size, st.st_mtime_ns // 1_000_000))
        return out

    def is_directory(self, location: PathLike) -> bool:
        return _path(location).is_dir()

    def make_directory(self, location: PathLike) -> bool:
        path = _path(location)
        try:
            path.mkdir()
        except FileExistsError:
            if not path.is_dir():  # a file (or a dangling link) holds the name
                raise
            return False
        return True

    def remove_empty_directory(self, location: PathLike) -> bool:
        path = _path(location)
        if any(path.iterdir()):
            return False
        path.rmdir()
        return True

    def missing_ancestor(self, location: PathLike) -> Location | None:
        path = _path(location)
        if path.exists():
            return None
        missing = path
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        return missing

    def prune_empty_directories(
        self,
        root: PathLike,
        files: Iterable[PathLike],
        *,
        whole_tree: bool = False,
        up_to: PathLike | None = None,
    ) -> int:
        """``rmdir`` refuses a directory that is not empty: another write's files keep theirs."""
        top = _path(root)
        dirs: set[Path] = set()
        for f in map(_path, files):
            d = f.parent
            while d != top and top in d.parents:
                dirs.add(d)
                d = d.parent
        if whole_tree:
            for current, subdirs, _files in os.walk(top):
                dirs.update(Path(current) / s for s in subdirs)
        removed = 0
        for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
            try:
                d.rmdir()
                removed += 1
            except OSError:
                pass  # not empty (another write's files), or already gone
        if up_to is not None:
            last = _path(up_to)
            d = top
            while True:
                try:
                    d.rmdir()
                    removed += 1
                except OSError:
                    break
                if d == last:
                    break
                d = d.parent
        return removed

    def resolved(self, location: PathLike, dirs: dict[str, str] | None = None) -> str:
        """The file itself is still checked for being a link when its directory came from ``dirs``."""
        path = _path(location)
        if dirs is None:
            return os.path.realpath(path)
        parent = str(path.parent)
        real_dir = dirs.get(parent)
        if real_dir is None:
            real_dir = dirs[parent] = os.path.realpath(parent)
        real = os.path.join(real_dir, path.name)
        return os.path.realpath(real) if os.path.islink(real) else real

    def escapes(self, root: PathLike, location: PathLike) -> bool:
        real_root = os.path.realpath(_path(root)).rstrip("/") + "/"
        return not os.path.realpath(_path(location)).startswith(real_root)

    def iceberg_properties(self, location: PathLike) -> dict[str, str]:
        """A local file needs no settings."""
        _path(location)
        return {}


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


class _LocalOutput(OutputFile):
    location: Path

    def write(self, data: bytes) -> None:
        """Temporary file + rename: a reader never sees a partial file."""
        local.write_bytes(self.location, data)

    def create(self, data: bytes) -> bool:
        return local.create_if_absent(self.location, data)

    def to_input_file(self) -> InputFile:
        return _LocalInput(self.location)
