"""The storage layer: the only code that lists, reads, writes or deletes a table's files outside Spark.

A location is a local ``Path`` or an :class:`ObjectPath` (``s3://``/``s3a://``/``s3n://``, ``gs://``,
``abfs://``/``abfss://``/``wasbs://``), parsed by :func:`parse_location`. Local files go through
plain ``os`` calls (the fast path, with the guards against named pipes and devices); object stores
through pyarrow's S3, GCS and Azure filesystems, configured from the running Spark session's Hadoop
settings or each cloud's standard environment (:mod:`.config`). The one operation pyarrow lacks, a
create that fails when the object exists, uses the cloud's SDK (:mod:`.conditional`).

:class:`FileIO` (:mod:`.fileio`, in pyiceberg's manner) is abstract: :class:`LocalFileIO` reaches
local files, :class:`ObjectStoreFileIO` object stores with one set of store settings; each hands out
an :class:`InputFile` or :class:`OutputFile` per location. :func:`io_for` chooses one from a table's
root, once, at an edge (a write, an upgrade, a check, a conversion, the command line, the rule service
from the settings a driver sends with a request), and it is passed down: every reader and writer below
takes it as a required ``io``, and a snapshot keeps the one it was read with.

Paths inside a table are resolved with :mod:`icecompat_writer.deltalog.paths`, which refuses anything
outside the table root; this package reads only what it is given.
"""

from .config import SETTINGS, StoreOptions, resolve_options
from .fileio import FileEntry, FileIO, InputFile, OutputFile
from .filesystems import clear_cache, filesystem, filesystem_kwargs, options_for
from .local import NotRegularFileError, check_regular_file, file_kind, open_regular_file
from .local_io import LocalFileIO
from .object_io import ObjectStoreFileIO
from .ops import LOCAL_READERS, LOCAL_SERIAL_MAX, MAX_PARALLEL_READS, footer_readers, io_for, map_bounded
from .uri import (
    FAMILIES,
    Location,
    ObjectPath,
    UnsupportedSchemeError,
    escape_decoded,
    iceberg_uri,
    is_local,
    is_under,
    location_in,
    location_of_iceberg_uri,
    location_uri,
    parse_location,
    relative_text,
)

__all__ = [
    "FAMILIES",
    "LOCAL_READERS",
    "LOCAL_SERIAL_MAX",
    "MAX_PARALLEL_READS",
    "SETTINGS",
    "FileEntry",
    "FileIO",
    "InputFile",
    "LocalFileIO",
    "Location",
    "NotRegularFileError",
    "ObjectPath",
    "ObjectStoreFileIO",
    "OutputFile",
    "StoreOptions",
    "UnsupportedSchemeError",
    "check_regular_file",
    "clear_cache",
    "escape_decoded",
    "file_kind",
    "filesystem",
    "filesystem_kwargs",
    "footer_readers",
    "iceberg_uri",
    "io_for",
    "is_local",
    "is_under",
    "location_in",
    "location_of_iceberg_uri",
    "location_uri",
    "map_bounded",
    "open_regular_file",
    "options_for",
    "parse_location",
    "relative_text",
    "resolve_options",
]
