"""File names of a Delta log, and where the paths written in the log point on disk.

The log is a flat directory whose file names carry the structure (PROTOCOL.md "Delta Log Entries",
"Checkpoints", "Log Compaction Files"): a version, zero-padded so that names sort like numbers, and a
suffix telling the kind of file. Parsing names is kept apart from reading files so that choosing which
files to read (replay.py) needs nothing but a directory listing.

AddFile paths are RFC 2396 URI references: relative to the table root or absolute, percent-encoded.
:func:`resolve_data_path` is the single place that turns one into a location (a local path, or an
object-store path for a table on S3, GCS or Azure), and it refuses anything that would leave the table
root, because the checker opens what it resolves and an audited table must not make us read
``/etc/passwd``, a file in another table, or an object in another bucket or storage account.
"""

from __future__ import annotations

import enum
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from icecompat_writer import storage
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import FileIO, Location, ObjectPath

__all__ = [
    "DELTA_LOG_DIR",
    "LAST_CHECKPOINT_FILE",
    "SIDECARS_DIR",
    "LogFile",
    "LogFileKind",
    "classic_checkpoint_name",
    "commit_file_name",
    "compaction_file_name",
    "decode_uri_path",
    "list_log_entries",
    "list_log_files",
    "multipart_checkpoint_name",
    "parse_log_file_name",
    "resolve_data_path",
    "resolve_data_path_text",
    "table_root_path",
    "uuid_checkpoint_name",
]

DELTA_LOG_DIR = "_delta_log"
LAST_CHECKPOINT_FILE = "_last_checkpoint"
SIDECARS_DIR = "_sidecars"

_V = r"(\d{20})"
_COMMIT_RE = re.compile(rf"^{_V}\.json$")
_CLASSIC_RE = re.compile(rf"^{_V}\.checkpoint\.parquet$")
_MULTIPART_RE = re.compile(rf"^{_V}\.checkpoint\.(\d{{10}})\.(\d{{10}})\.parquet$")
_UUID_RE = re.compile(
    rf"^{_V}\.checkpoint\.([0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-"
    r"[0-9a-fA-F]{12})\.(json|parquet)$"
)
_COMPACTION_RE = re.compile(rf"^{_V}\.{_V}\.compacted\.json$")
_CHECKSUM_RE = re.compile(rf"^{_V}\.crc$")
# RFC 2396 scheme: a letter, then letters, digits, "+", "-", "."; then ":".
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class LogFileKind(enum.Enum):
    """What a file in ``_delta_log`` is, as told by its name."""

    COMMIT = "commit"
    CLASSIC_CHECKPOINT = "classic checkpoint"
    MULTIPART_CHECKPOINT = "multi-part checkpoint"
    UUID_CHECKPOINT = "UUID-named checkpoint"
    COMPACTION = "log compaction"
    CHECKSUM = "version checksum"

    @property
    def is_checkpoint(self) -> bool:
        return self in (
            LogFileKind.CLASSIC_CHECKPOINT,
            LogFileKind.MULTIPART_CHECKPOINT,
            LogFileKind.UUID_CHECKPOINT,
        )


@dataclass(frozen=True)
class LogFile:
    """One recognised file of the log.

    ``version`` is the version the file is named after (the start version of a compaction file);
    ``end_version`` is set for compaction files only; ``part``/``num_parts`` for multi-part checkpoint
    parts; ``uuid`` for UUID-named checkpoints. ``file_format`` is ``json`` or ``parquet``.
    """

    path: Location
    kind: LogFileKind
    version: int
    end_version: int | None = None
    part: int | None = None
    num_parts: int | None = None
    uuid: str | None = None
    file_format: str = "json"

    @property
    def name(self) -> str:
        return self.path.name


def commit_file_name(version: int) -> str:
    return f"{version:020d}.json"


def classic_checkpoint_name(version: int) -> str:
    return f"{version:020d}.checkpoint.parquet"


def multipart_checkpoint_name(version: int, part: int, num_parts: int) -> str:
    return f"{version:020d}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def uuid_checkpoint_name(version: int, uuid: str, file_format: str = "json") -> str:
    return f"{version:020d}.checkpoint.{uuid}.{file_format}"


def compaction_file_name(start_version: int, end_version: int) -> str:
    return f"{start_version:020d}.{end_version:020d}.compacted.json"


def parse_log_file_name(path: Location) -> LogFile | None:
    """The :class:`LogFile` a name in ``_delta_log`` stands for, or None for anything else.

    Names that merely look alike are not accepted (a compaction whose end is not after its start, a
    multi-part part numbered 0 or beyond its count): the protocol forbids them, and reading such a file
    as if it were valid would put wrong actions into the snapshot.
    """
    name = path.name
    if m := _COMMIT_RE.match(name):
        return LogFile(path, LogFileKind.COMMIT, int(m.group(1)))
    if m := _CLASSIC_RE.match(name):
        return LogFile(path, LogFileKind.CLASSIC_CHECKPOINT, int(m.group(1)), file_format="parquet")
    if m := _MULTIPART_RE.match(name):
        part, num_parts = int(m.group(2)), int(m.group(3))
        if not 1 <= part <= num_parts:
            return None
        return LogFile(
            path,
            LogFileKind.MULTIPART_CHECKPOINT,
            int(m.group(1)),
            part=part,
            num_parts=num_parts,
            file_format="parquet",
        )
    if m := _UUID_RE.match(name):
        return LogFile(
            path, LogFileKind.UUID_CHECKPOINT, int(m.group(1)), uuid=m.group(2), file_format=m.group(3)
        )
    if m := _COMPACTION_RE.match(name):
        start, end = int(m.group(1)), int(m.group(2))
        if end <= start:
            return None
        return LogFile(path, LogFileKind.COMPACTION, start, end_version=end)
    if m := _CHECKSUM_RE.match(name):
        return LogFile(path, LogFileKind.CHECKSUM, int(m.group(1)))
    return None


def list_log_files(log_dir: Location, *, io: FileIO) -> list[LogFile]:
    """Every recognised file directly in ``log_dir`` (not in ``_sidecars``/``_staged_commits``).

    One listing of the directory (a ``scandir`` locally, one paginated LIST on an object store): the
    listing, not the ``_last_checkpoint`` hint, is what decides which files exist.
    """
    return list_log_entries(log_dir, io=io)[0]


def list_log_entries(log_dir: Location, *, io: FileIO) -> tuple[list[LogFile], frozenset[str]]:
    """:func:`list_log_files`, and the names of every regular file the listing saw (recognised or not),
    so a reader learns from the same listing whether ``_last_checkpoint`` exists."""
    out: list[LogFile] = []
    names: set[str] = set()
    try:
        for entry in io.list_files(log_dir):
            names.add(entry.name)
            parsed = parse_log_file_name(entry.location)
            if parsed is not None:
                out.append(parsed)
    except FileNotFoundError:
        raise TableReadError(f"not a Delta table: {log_dir} does not exist") from None
    except NotADirectoryError:
        raise TableReadError(f"not a Delta table: {log_dir} is not a directory") from None
    except OSError as e:
        raise TableReadError(f"cannot list the Delta log {log_dir}: {e}") from e
    return out, frozenset(names)


def table_root_path(table_root: str | Path | ObjectPath) -> Location:
    """The table root as an absolute local path or an object-store path.

    ``file:`` URIs and plain paths give a local path; ``s3://``/``s3a://``/``s3n://``, ``gs://``,
    ``abfs[s]://`` and ``wasbs://`` an :class:`~icecompat_writer.storage.ObjectPath`; other schemes are
    refused. Only lexical normalisation is done (no symlink resolution), so the root the caller names
    is the root the rest of the reader compares against.
    """
    return storage.parse_location(table_root)


def _is_windows_drive(text: str) -> bool:
    return len(text) >= 2 and text[1] == ":" and text[0].isalpha() and os.name == "nt"


def decode_uri_path(uri_path: str) -> str:
    """Percent-decode a log path (``+`` stays ``+``: these are URI paths, not form data)."""
    return unquote(uri_path) if "%" in uri_path else uri_path


def resolve_data_path(table_root: str | Path | ObjectPath, add_path: str) -> Location | None:
    """The file an AddFile/RemoveFile ``path`` names, or None if it is not inside the table root.

    Relative paths are decoded and joined to the root; absolute paths (``/x``, ``file:`` URIs, or for
    an object-store table a URI of the same store) are accepted only when they fall under the root.
    Any other scheme, another bucket or storage account, and any ``..`` that climbs out of the root
    give None: such a file is reported, never opened. The check is lexical (no symlinks are followed),
    which is what keeps it cheap for 100,000 files.
    """
    root = table_root_path(table_root)
    resolved = resolve_data_path_text(str(root), add_path)  # a local path's text, or the root's URI
    return None if resolved is None else storage.location_in(root, resolved)


def resolve_data_path_text(root_text: str, add_path: str) -> str | None:
    """:func:`resolve_data_path` on plain strings (``root_text`` absolute and normalised: a local
    path, or an object-store URI as ``ObjectPath.uri`` spells it). The result is decoded.

    Kept separate because building a ``Path`` per file is the most expensive step of checking
    100,000 AddFiles; the snapshot only needs to know whether each one stays inside the root.
    """
    if not add_path:
        return None
    remote = root_text[:1] != "/"
    if _SCHEME_RE.match(add_path):
        if remote:
            return _remote_absolute(root_text, add_path)
        parts = urlsplit(add_path)
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            return None
        if parts.query or parts.fragment:
            return None
        return _inside(root_text, os.path.normpath(unquote(parts.path)))
    decoded = decode_uri_path(add_path)
    if "\x00" in decoded:
        return None
    if decoded.startswith("/"):
        if remote:
            # Hadoop resolves a path without a scheme against the table's own store
            return _remote_absolute(root_text, _store_prefix(root_text) + add_path)
        return _inside(root_text, os.path.normpath(decoded))
    if (
        ".." not in decoded
        and "\\" not in decoded
        and "./" not in decoded
        and "//" not in decoded
        and decoded[-1] not in "/."
    ):
        # Fast path: a plain relative path cannot leave the root.
        return root_text.rstrip("/") + "/" + decoded
    if remote:
        if "\\" in decoded:
            return None
        prefix = _store_prefix(root_text)
        root_key = root_text[len(prefix) :]
        joined = posixpath.normpath(posixpath.join(root_key or "/", decoded))
        return _inside_remote(root_text, prefix + joined)
    return _inside(root_text, os.path.normpath(os.path.join(root_text, decoded)))


def _store_prefix(uri: str) -> str:
    """``scheme://authority`` of an object-store URI."""
    scheme_end = uri.index("://") + 3
    slash = uri.find("/", scheme_end)
    return uri if slash < 0 else uri[:slash]


def _remote_absolute(root_text: str, add_path: str) -> str | None:
    """An absolute URI in the log of an object-store table: inside the root, same bucket/account only.

    ``s3``, ``s3a`` and ``s3n`` name the same bucket; the result keeps the root's scheme.
    """
    try:
        target = storage.parse_location(add_path)
        root = storage.parse_location(storage.escape_decoded(root_text))
    except TableReadError:
        return None
    relative = storage.relative_text(target, root)  # None: another store, bucket or account
    if relative is None or relative == "." or "\x00" in relative or "\\" in relative:
        return None
    return str(root / relative)


def _inside_remote(root_text: str, candidate: str) -> str | None:
    return candidate if candidate.startswith(root_text.rstrip("/") + "/") else None


def _inside(root_text: str, candidate: str) -> str | None:
    if candidate.startswith(root_text.rstrip("/") + "/"):
        return candidate
    # The root may be named through a symlink (e.g. /tmp -> /private/tmp) while the log holds the
    # real path; accept absolute paths under the resolved root as well.
    real_root = os.path.realpath(root_text)
    if real_root != root_text and candidate.startswith(real_root.rstrip("/") + "/"):
        return candidate
    return None
