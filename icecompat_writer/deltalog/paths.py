"""File names of a Delta log, and where the paths written in the log point on disk.

The log is a flat directory whose file names carry the structure (PROTOCOL.md "Delta Log Entries",
"Checkpoints", "Log Compaction Files"): a version, zero-padded so that names sort like numbers, and a
suffix telling the kind of file. Parsing names is kept apart from reading files so that choosing which
files to read (replay.py) needs nothing but a directory listing.

AddFile paths are RFC 2396 URI references: relative to the table root or absolute, percent-encoded.
:func:`resolve_data_path` is the single place that turns one into a local path, and it refuses anything
that would leave the table root, because the checker opens what it resolves and an audited table must
not make us read ``/etc/passwd`` or a file in another table.
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from icecompat_writer.errors import TableReadError

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

    path: Path
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


def parse_log_file_name(path: Path) -> LogFile | None:
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


def list_log_files(log_dir: Path) -> list[LogFile]:
    """Every recognised file directly in ``log_dir`` (not in ``_sidecars``/``_staged_commits``).

    One ``scandir`` of the directory: a local listing is cheap, and the listing (not the
    ``_last_checkpoint`` hint) is what decides which files exist.
    """
    out: list[LogFile] = []
    try:
        with os.scandir(log_dir) as it:
            for entry in it:
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                parsed = parse_log_file_name(Path(entry.path))
                if parsed is not None:
                    out.append(parsed)
    except FileNotFoundError:
        raise TableReadError(f"not a Delta table: {log_dir} does not exist") from None
    except NotADirectoryError:
        raise TableReadError(f"not a Delta table: {log_dir} is not a directory") from None
    except OSError as e:
        raise TableReadError(f"cannot list the Delta log {log_dir}: {e}") from e
    return out


def table_root_path(table_root: str | Path) -> Path:
    """The table root as an absolute local path; ``file:`` URIs are accepted, other schemes refused.

    Only lexical normalisation is done (no symlink resolution), so the root the caller names is the
    root the rest of the reader compares against.
    """
    if isinstance(table_root, str) and _SCHEME_RE.match(table_root) and not _is_windows_drive(table_root):
        parts = urlsplit(table_root)
        if parts.scheme.lower() != "file":
            raise TableReadError(
                f"only local tables can be read without Spark; {table_root!r} uses the "
                f"{parts.scheme!r} scheme"
            )
        if parts.netloc not in ("", "localhost"):
            raise TableReadError(f"file URI with a remote host is not a local path: {table_root!r}")
        table_root = unquote(parts.path)
    return Path(os.path.abspath(os.fspath(table_root)))


def _is_windows_drive(text: str) -> bool:
    return len(text) >= 2 and text[1] == ":" and text[0].isalpha() and os.name == "nt"


def decode_uri_path(uri_path: str) -> str:
    """Percent-decode a log path (``+`` stays ``+``: these are URI paths, not form data)."""
    return unquote(uri_path) if "%" in uri_path else uri_path


def resolve_data_path(table_root: str | Path, add_path: str) -> Path | None:
    """The local file an AddFile/RemoveFile ``path`` names, or None if it is not inside the table root.

    Relative paths are decoded and joined to the root; absolute paths (``/x`` or ``file:`` URIs) are
    accepted only when they fall under the root. Any other scheme (``s3:``, ``hdfs:``, ...) and any
    ``..`` that climbs out of the root give None: such a file is reported, never opened. The check is
    lexical (no symlinks are followed), which is what keeps it cheap for 100,000 files.
    """
    root = table_root if isinstance(table_root, Path) else table_root_path(table_root)
    resolved = resolve_data_path_text(os.fspath(root), add_path)
    return None if resolved is None else Path(resolved)


def resolve_data_path_text(root_text: str, add_path: str) -> str | None:
    """:func:`resolve_data_path` on plain strings (``root_text`` absolute and normalised).

    Kept separate because building a ``Path`` per file is the most expensive step of checking
    100,000 AddFiles; the snapshot only needs to know whether each one stays inside the root.
    """
    if not add_path:
        return None
    if _SCHEME_RE.match(add_path):
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
    return _inside(root_text, os.path.normpath(os.path.join(root_text, decoded)))


def _inside(root_text: str, candidate: str) -> str | None:
    if candidate.startswith(root_text.rstrip("/") + "/"):
        return candidate
    # The root may be named through a symlink (e.g. /tmp -> /private/tmp) while the log holds the
    # real path; accept absolute paths under the resolved root as well.
    real_root = os.path.realpath(root_text)
    if real_root != root_text and candidate.startswith(real_root.rstrip("/") + "/"):
        return candidate
    return None
