"""One data file's footer read and judged against its AddFile, and where such reads run.

A :class:`FooterJob` names the files of one table to read (each with its claims and, on an object
store, its size from one listing); a :class:`FooterReader` reads it and returns one
:class:`FileRead` per file: the footer, or the :class:`CheckFinding` that says why the checker cannot
vouch for the file. :func:`read_in_threads` reads here (locally one file after another, with the
links leaving the table root checked; on an object store one ranged read per footer in a bounded
pool); a Spark session's executors read slices of the same job with the same functions
(:mod:`icecompat_writer.jvm.footers`). :func:`footers_read_by` installs a reader for a block, so
the entry points that hold a session need not hand it through every layer.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from icecompat_writer import storage
from icecompat_writer.compat import StrEnum
from icecompat_writer.deltalog.findings import FindingCode, LogFinding
from icecompat_writer.deltalog.paths import resolve_data_path, resolve_data_path_text
from icecompat_writer.deltalog.readers import file_kind
from icecompat_writer.evidence.footers import FooterReadError, read_footer, read_listed_footer
from icecompat_writer.facts import ParquetFooter
from icecompat_writer.schema import JsonDict
from icecompat_writer.storage import FileIO, Location

__all__ = [
    "DELETION_VECTOR_CARDINALITY",
    "MISSING_DATA_FILE",
    "NUM_RECORDS_FROM_FOOTERS",
    "PATH_OUTSIDE_TABLE",
    "ROW_COUNT_MISMATCH",
    "SIZE_MISMATCH",
    "UNREADABLE_DATA_FILE",
    "UNREADABLE_DELETION_VECTOR",
    "CheckFinding",
    "FileClaim",
    "FileRead",
    "FooterJob",
    "FooterReader",
    "Severity",
    "footer_reader",
    "footers_read_by",
    "read_in_threads",
    "reads_here",
]

# Codes of the findings about data files (the log reader's codes are FindingCode values).
MISSING_DATA_FILE = "missing_data_file"
UNREADABLE_DATA_FILE = "unreadable_data_file"
SIZE_MISMATCH = "size_mismatch"
ROW_COUNT_MISMATCH = "row_count_mismatch"
UNREADABLE_DELETION_VECTOR = "unreadable_deletion_vector"
DELETION_VECTOR_CARDINALITY = "deletion_vector_cardinality_mismatch"
NUM_RECORDS_FROM_FOOTERS = "num_records_from_footers"
PATH_OUTSIDE_TABLE = FindingCode.PATH_OUTSIDE_TABLE.value


class Severity(StrEnum):
    """Whether a finding makes the table non-compliant (``error``) or is only worth knowing."""

    ERROR = "error"
    WARNING = "warning"


# Log problems after which the reader still has exactly the state delta-spark reads: a wrong or
# unreadable ``_last_checkpoint`` hint (delta-spark lists the directory too) and a multi-part checkpoint
# with parts missing (the protocol tells every reader to ignore it; a crashed checkpoint leaves one).
# Every other log finding means a line, a commit or a checkpoint was not seen as written.
_WARNING_CODES = frozenset(
    {
        FindingCode.STALE_LAST_CHECKPOINT,
        FindingCode.UNREADABLE_LAST_CHECKPOINT,
        FindingCode.INCOMPLETE_CHECKPOINT,
        FindingCode.STATS_FROM_COMMITS,
    }
)


@dataclass(frozen=True)
class CheckFinding:
    """Something the checker met that is not a rule violation: damage, or a file it could not read.

    ``code`` is a stable identifier: a :class:`~icecompat_writer.deltalog.FindingCode` value for the
    log, or ``missing_data_file`` / ``unreadable_data_file`` / ``size_mismatch`` / ``row_count_mismatch``
    / ``path_outside_table`` for data files, ``unreadable_deletion_vector`` /
    ``deletion_vector_cardinality_mismatch`` for a data file's deletion vector,
    ``num_records_from_footers`` (a warning) when row counts the log does not hold were read from the
    data files' footers (``stats_from_commits``, also a warning, when the log's commit files held the
    statistics a checkpoint dropped). ``file`` is a log file
    relative to the table root, or a data file's path exactly as the log writes it; ``line`` is 1-based
    (log files only).
    """

    code: str
    message: str
    severity: Severity = Severity.ERROR
    file: str | None = None
    line: int | None = None

    @property
    def blocking(self) -> bool:
        """True when the finding makes the table non-compliant."""
        return self.severity is Severity.ERROR

    @classmethod
    def from_log(cls, finding: LogFinding) -> CheckFinding:
        severity = Severity.WARNING if finding.code in _WARNING_CODES else Severity.ERROR
        return cls(finding.code.value, finding.message, severity, finding.file, finding.line)

    def render(self) -> str:
        where = ""
        if self.file is not None:
            where = f" ({self.file}" + (f", line {self.line}" if self.line is not None else "") + ")"
        return f"{self.severity.value} {self.code}: {self.message}{where}"

    def to_json(self) -> JsonDict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
        }


class FileClaim(NamedTuple):
    """What one footer read is held to: an AddFile's path (exactly as the log writes it), its ``size``
    and its ``numRecords``. Three fields, so that a reader on another machine is sent little."""

    path: str
    size: int
    num_records: int | None


FileRead = tuple[ParquetFooter | None, CheckFinding | None]
"""One file's footer (None when not read) and the finding that says why, or that it disagrees with
its claim."""


@dataclass(frozen=True)
class FooterJob:
    """The footers of one table's files to read, as the driver decided them: readable anywhere.

    ``files`` holds each file's claim and, on an object store, its size from the driver's one
    listing of the table (None: not listed, so missing). The job says nothing about where it is read:
    a :class:`FooterReader` decides that, and every reader returns what :func:`read_in_threads` would.
    """

    root: Location
    io: FileIO
    files: Sequence[tuple[FileClaim, int | None]]

    def with_files(self, files: Sequence[tuple[FileClaim, int | None]]) -> FooterJob:
        """The same table and store settings, other files (a slice of these)."""
        return dataclasses.replace(self, files=files)


class FooterReader(Protocol):
    """Reads a :class:`FooterJob`: one :class:`FileRead` per file, in the job's order.

    :func:`read_in_threads` (this process) is the default; a reader that sends slices of the job
    elsewhere (a Spark session's executors) lives with the code that knows about Spark and is handed
    down by the entry points that hold a session.
    """

    def __call__(self, job: FooterJob) -> Iterable[FileRead]: ...


def read_in_threads(job: FooterJob) -> Iterator[FileRead]:
    """Read ``job`` here: on an object store in a bounded pool of threads (each footer one ranged read
    of the object's tail, the latency overlapped), locally one file after another (a footer read is
    a few system calls; the links leaving the table root are checked on each)."""
    if job.io.remote:
        root, io = job.root, job.io
        yield from storage.map_bounded(lambda item: _read_object(root, item[0], item[1], io), job.files)
        return
    root_text = str(job.root)
    real_root = os.path.realpath(root_text)
    for claim, _ in job.files:
        yield _read_data_file(root_text, real_root, claim, job.io)


def _inside(path: str, root: str) -> bool:
    return path.startswith(root.rstrip("/") + "/")


def _read_data_file(root: str, real_root: str, add: FileClaim, io: FileIO) -> FileRead:
    """The footer of one live data file, or the finding that says why the checker cannot vouch for it.

    The log path is resolved lexically (a path outside the root is already a finding and is skipped
    here), then with symlinks resolved: a link inside the table that leads elsewhere is not followed.
    The AddFile's ``size`` is compared with the file's, and ``numRecords`` with the footer's row count:
    Iceberg manifests copy both, so a file that disagrees with its AddFile is not the file the log means.
    """
    local = resolve_data_path_text(root, add.path)
    if local is None:
        return None, None
    real = os.path.realpath(local)
    if not _inside(real, real_root):
        return None, CheckFinding(
            PATH_OUTSIDE_TABLE,
            f"data file {add.path!r} is a symbolic link (or lies under one) leading outside the table "
            f"root, to {real}; it was not opened",
            file=add.path,
        )
    try:
        st = os.stat(real)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            # a FIFO would block the reader forever, a device could be endless: never opened
            return None, CheckFinding(
                UNREADABLE_DATA_FILE,
                f"data file {add.path!r} is not a regular file ({file_kind(st.st_mode)}); it was not opened",
                file=add.path,
            )
        size = st.st_size
        footer = read_footer(real, io=io)  # a local file, checked above to be a regular file
    except (FooterReadError, OSError) as e:  # what a bad file raises; anything else is a bug, raised
        missing = not os.path.exists(real)  # or a link inside the table to a file that is gone
        return None, _footer_finding(add, e, missing, local)
    return footer, _claim_mismatch(add, footer, size)


def _read_object(root: Location, add: FileClaim, size: int | None, io: FileIO) -> FileRead:
    """:func:`_read_data_file` for a table on an object store: one ranged read of the object's tail.

    ``size`` comes from one listing of the table (None: not listed): it says whether the file exists
    and how long it is, so no file costs more than the ranged read of its footer. An object store has
    no links, pipes or devices; a path outside the root is already a finding.
    """
    target = resolve_data_path(root, add.path)
    if target is None:
        return None, None
    try:
        if size is None:
            raise FooterReadError(target, "the file does not exist")
        footer = read_listed_footer(target, size, io=io)
    except FooterReadError as e:  # what a bad file raises; anything else is a bug, raised
        return None, _footer_finding(add, e, e.reason == "the file does not exist", target)
    return footer, _claim_mismatch(add, footer, size)


def _footer_finding(
    add: FileClaim, e: FooterReadError | OSError, missing: bool = False, where: object = None
) -> CheckFinding:
    """Why the checker cannot vouch for a data file whose footer it could not read, wherever it lies:
    gone (``missing``, at ``where``), or not readable Parquet (a :class:`FooterReadError`, which the
    footer decoder raises for every malformed footer, or an I/O error). Any other exception from a
    reader is a defect of the reader and propagates."""
    if missing:
        return CheckFinding(
            MISSING_DATA_FILE, f"data file {add.path!r} does not exist ({where})", file=add.path
        )
    reason = e.reason if isinstance(e, FooterReadError) else str(e)
    return CheckFinding(
        UNREADABLE_DATA_FILE,
        f"data file {add.path!r} is not a readable Parquet file: {reason}",
        file=add.path,
    )


def _claim_mismatch(add: FileClaim, footer: ParquetFooter, size: int) -> CheckFinding | None:
    if add.size and size != add.size:
        return CheckFinding(
            SIZE_MISMATCH,
            f"data file {add.path!r} has {size} bytes but its AddFile says {add.size}",
            file=add.path,
        )
    if add.num_records is not None and footer.num_rows != add.num_records:
        return CheckFinding(
            ROW_COUNT_MISMATCH,
            f"data file {add.path!r} holds {footer.num_rows} rows but its AddFile's numRecords says "
            f"{add.num_records}",
            file=add.path,
        )
    return None


_READER: ContextVar[FooterReader] = ContextVar("icecompat_footer_reader", default=read_in_threads)


def footer_reader() -> FooterReader:
    """The reader in force: :func:`read_in_threads` unless an entry point installed another."""
    return _READER.get()


@contextmanager
def footers_read_by(reader: FooterReader | None) -> Iterator[None]:
    """Read every snapshot's footers with ``reader`` inside the ``with`` block (None: no change).

    An entry point that holds a Spark session (an upgrade, a conversion run with a session, a
    ``--database`` run) installs its executors' reader here once, instead of handing it through every
    layer between it and the footer reads; the block is this context's (a thread started inside it
    reads with the default). Readers return the same facts, so only where the reads run changes.
    """
    if reader is None:
        yield
        return
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)


def reads_here(reader: FooterReader, files: int, remote: bool) -> bool:
    """Whether ``reader`` reads a job of ``files`` footers (of a table on an object store: ``remote``)
    in this process. A reader that may send jobs elsewhere answers through a ``reads_here(files,
    remote)`` method of its own; any other reads here. A caller with a faster path of its own for
    reads in this process (the Iceberg verification of a local table) keeps it then."""
    decide = getattr(reader, "reads_here", None)
    return True if decide is None else bool(decide(files, remote))
