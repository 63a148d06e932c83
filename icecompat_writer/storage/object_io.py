"""``ObjectStoreFileIO``: a table in an object store (S3 and its Hadoop schemes, GCS, Azure).

Reads, writes and listings go through pyarrow's filesystem of the store (:mod:`.filesystems`), what
pyarrow cannot do as a table needs it through the cloud's SDK (:mod:`.conditional`). The store
settings are those the FileIO was built with (a Spark session's Hadoop settings, as the session
guard's driver hands them over), else the running session's, else the environment (:mod:`.config`),
resolved per bucket on each use: a rotated key is used from the next request on. An object store
has no directories (a prefix exists while an object is under it) and no links.

Request costs, the reason for each shape: a listing is one paginated LIST (1,000 keys a page),
sizes included, so a reader learns which files exist without probing names; a whole object is one
GET; a tail or a range one ranged GET; a Parquet footer whose size a listing gave one ranged GET of
the last 64 KiB and no HEAD; a create-if-absent one conditional PUT; deletes one batch request per
1,000 keys on S3, one request per object elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from . import local
from .conditional import create_object_if_absent, delete_objects, get_object, list_objects_after
from .config import StoreOptions, endpoint_parts, resolve_options
from .fileio import FileEntry, FileIO, InputFile, OutputFile, PathLike
from .filesystems import filesystem, options_for
from .uri import Location, ObjectPath, parse_location

__all__ = ["ObjectStoreFileIO", "missing"]

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


def _object(location: PathLike) -> ObjectPath:
    """``location`` as an object path (text is parsed); ``ValueError`` for a local path, which this
    FileIO does not reach."""
    loc = location if isinstance(location, ObjectPath) else parse_location(location)
    if not isinstance(loc, ObjectPath):
        raise ValueError(f"{loc} is a local path: an object-store table's files are all in its store")
    return loc


class ObjectStoreFileIO(FileIO):
    """Objects in S3, GCS or Azure, reached with one set of store settings.

    ``hadoop``: a Spark session's Hadoop settings (object-store keys), used before the environment;
    None: the running session's settings, else the environment. The values stay in this object's
    memory; they are never written or logged.
    """

    remote = True

    def __init__(self, hadoop: Mapping[str, str] | None = None) -> None:
        self._hadoop = dict(hadoop) if hadoop is not None else None

    def options(self, location: PathLike) -> StoreOptions:
        """The resolved store options of ``location``'s bucket (container)."""
        path = _object(location)
        if self._hadoop is not None:
            return resolve_options(path, self._hadoop)
        return options_for(path)

    def filesystem(self, path: ObjectPath) -> pafs.FileSystem:
        """The pyarrow filesystem that reaches ``path``'s bucket with these settings (cached by options)."""
        return filesystem(path, self.options(path))

    def new_input(self, location: PathLike, size: int | None = None) -> InputFile:
        return _ObjectInput(_object(location), self, size)

    def new_output(self, location: PathLike) -> OutputFile:
        return _ObjectOutput(_object(location), self)

    def delete(self, locations: Iterable[PathLike]) -> int:
        """Through the cloud's SDK (:func:`~.conditional.delete_objects`: pyarrow would leave
        directory markers), one batch per bucket."""
        groups: dict[tuple[str, str], list[ObjectPath]] = {}
        for p in map(_object, locations):
            groups.setdefault((p.family, p.authority), []).append(p)
        return sum(delete_objects(group, self.options(group[0])) for group in groups.values())

    def list_files(self, directory: PathLike) -> list[FileEntry]:
        path = _object(directory)
        infos = self._list(path, recursive=False)
        return [
            FileEntry(path.with_fs_path(i.path), int(i.size or 0))
            for i in infos
            if i.type == pafs.FileType.File and not i.base_name.startswith(".")
        ]

    def list_from(self, directory: PathLike, start_after: str) -> list[FileEntry]:
        """On S3 one paginated ``ListObjectsV2`` with ``StartAfter`` (on GCS ``list_blobs`` with
        ``start_offset``) asks the store only for the keys after it, so the cost follows what is
        new, not how long the directory is. Azure, whose listing has no start key, or a store whose
        SDK is not installed: the full listing filtered by name."""
        path = _object(directory)
        infos = list_objects_after(path, start_after, self.options(path))
        if infos is None:
            return super().list_from(path, start_after)
        return sorted(
            (FileEntry(path / name, size) for name, size in infos if name > start_after),
            key=lambda e: e.name,
        )

    def list_tree(self, directory: PathLike) -> list[FileEntry]:
        """One paginated listing."""
        path = _object(directory)
        infos = self._list(path, recursive=True)
        return [
            FileEntry(
                path.with_fs_path(i.path),
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

    def is_directory(self, location: PathLike) -> bool:
        path = _object(location)
        return bool(self.filesystem(path).get_file_info(path.fs_path).type == pafs.FileType.Directory)

    def make_directory(self, location: PathLike) -> bool:
        """Nothing to make (a prefix exists once an object is under it): False."""
        _object(location)
        return False

    def remove_empty_directory(self, location: PathLike) -> bool:
        """Nothing to remove (a prefix with nothing under it is gone by itself): False."""
        _object(location)
        return False

    def missing_ancestor(self, location: PathLike) -> Location | None:
        """None: there are no directories a writer makes."""
        _object(location)
        return None

    def prune_empty_directories(
        self,
        root: PathLike,
        files: Iterable[PathLike],
        *,
        whole_tree: bool = False,
        up_to: PathLike | None = None,
    ) -> int:
        """0: a prefix goes with its last object."""
        _object(root)
        return 0

    def resolved(self, location: PathLike, dirs: dict[str, str] | None = None) -> str:
        """The object's URI as it is: an object store has no links."""
        return _object(location).uri

    def escapes(self, root: PathLike, location: PathLike) -> bool:
        """False: an object store has no links."""
        _object(root)
        _object(location)
        return False

    def iceberg_properties(self, location: PathLike) -> dict[str, str]:
        path = _object(location)
        options = self.options(path).as_dict()
        names = _PYICEBERG_NAMES.get(path.family, {})
        out = {names[k]: v for k, v in options.items() if k in names}
        if path.family == "s3" and options.get("endpoint"):
            ssl = str(options.get("ssl", "true")).strip().lower() not in {"false", "0", "no"}
            scheme, host = endpoint_parts(options["endpoint"], ssl_default=ssl)
            out["s3.endpoint"] = f"{scheme}://{host}"
            path_style = str(options.get("path_style", "")).strip().lower() in {"true", "1", "yes"}
            out["s3.force-virtual-addressing"] = "false" if path_style else "true"
        elif path.family == "azure" and path.account:
            out["adls.account-name"] = path.account
        return out


class _ObjectInput(InputFile):
    location: ObjectPath

    def __init__(self, location: ObjectPath, io: ObjectStoreFileIO, size: int | None) -> None:
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


class _ObjectOutput(OutputFile):
    location: ObjectPath

    def __init__(self, location: ObjectPath, io: ObjectStoreFileIO) -> None:
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


