"""The storage layer: the only code that lists, reads, writes or deletes a table's files outside Spark.

A location is a local ``Path`` or an :class:`ObjectPath` (``s3://``/``s3a://``/``s3n://``, ``gs://``,
``abfs://``/``abfss://``/``wasbs://``), parsed by :func:`parse_location`. Local files go through
plain ``os`` calls (the fast path, with the guards against named pipes and devices); object stores
through pyarrow's S3, GCS and Azure filesystems, configured from the running Spark session's Hadoop
settings or each cloud's standard environment (:mod:`.config`). The one operation pyarrow lacks, a
create that fails when the object exists, uses the cloud's SDK (:mod:`.conditional`).

:class:`FileIO` (:mod:`.fileio`, in pyiceberg's manner) holds one set of store settings and hands out
an :class:`InputFile` or :class:`OutputFile` per location. It is built at an edge (a write, an
upgrade, the command line, the rule service from the settings a driver sends with a request) and
passed down: the log reader, the checker and the footer readers take it as ``io``, and a snapshot
keeps the one it was read with. The module-level operations (:mod:`.ops`) are those of
:data:`DEFAULT_IO`, whose settings are the running session's, else the environment; it is also
the default ``io`` of the public readers.

Paths inside a table are resolved with :mod:`icecompat_writer.deltalog.paths`, which refuses anything
outside the table root; this package reads only what it is given.
"""

from .config import SETTINGS, StoreOptions, resolve_options
from .fileio import FileIO, InputFile, OutputFile
from .filesystems import clear_cache, filesystem, filesystem_kwargs, options_for
from .local import NotRegularFileError, check_regular_file, file_kind, open_regular_file
from .ops import (
    DEFAULT_IO,
    LOCAL_READERS,
    LOCAL_SERIAL_MAX,
    MAX_PARALLEL_READS,
    FileEntry,
    create_if_absent,
    delete_files,
    exists,
    file_size,
    footer_readers,
    list_files,
    list_tree,
    make_directory,
    map_bounded,
    mtime_ms,
    parquet_source,
    read_bytes,
    read_parquet_metadata,
    read_range,
    read_tail,
    remove_empty_directory,
    write_bytes,
)
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
    "DEFAULT_IO",
    "FAMILIES",
    "LOCAL_READERS",
    "LOCAL_SERIAL_MAX",
    "MAX_PARALLEL_READS",
    "SETTINGS",
    "FileEntry",
    "FileIO",
    "InputFile",
    "Location",
    "NotRegularFileError",
    "ObjectPath",
    "OutputFile",
    "StoreOptions",
    "UnsupportedSchemeError",
    "check_regular_file",
    "clear_cache",
    "create_if_absent",
    "delete_files",
    "escape_decoded",
    "exists",
    "file_kind",
    "file_size",
    "filesystem",
    "filesystem_kwargs",
    "footer_readers",
    "iceberg_uri",
    "is_local",
    "is_under",
    "list_files",
    "list_tree",
    "location_in",
    "location_of_iceberg_uri",
    "location_uri",
    "make_directory",
    "map_bounded",
    "mtime_ms",
    "open_regular_file",
    "options_for",
    "parquet_source",
    "parse_location",
    "read_bytes",
    "read_parquet_metadata",
    "read_range",
    "read_tail",
    "relative_text",
    "remove_empty_directory",
    "resolve_options",
    "write_bytes",
]
