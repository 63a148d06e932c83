"""Auditing an existing Delta table against a profile, from its log and its Parquet footers only.

No Spark: the log is replayed by :mod:`icecompat_writer.deltalog`, the live files are read by
:mod:`icecompat_writer.evidence` (footers, deletion vectors, and a :class:`CheckFinding` for
whatever could not be seen), and the verdict comes from the same rule catalog the writer enforces,
so a table ``compat_write`` commits always checks clean and the checker never invents compliance
rules of its own. The verdict is a :class:`~icecompat_writer.checking.report.Report`.

What the checker adds to the rules is the honesty of an auditor: whatever it could not see is a
:class:`CheckFinding`, and an *error* finding makes the table non-compliant, because a checker cannot
vouch for a log line it skipped or a data file it could not read.

The report model and the live-file evidence once lived in this module; their names are still
importable from here.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import pyarrow

from icecompat_writer.checking.report import JSON_FORMAT, Report, reports_to_json, violation_file
from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.errors import IcecompatError, TableReadError
from icecompat_writer.evidence.file_reads import (
    DELETION_VECTOR_CARDINALITY,
    MISSING_DATA_FILE,
    NUM_RECORDS_FROM_FOOTERS,
    PATH_OUTSIDE_TABLE,
    ROW_COUNT_MISMATCH,
    SIZE_MISMATCH,
    UNREADABLE_DATA_FILE,
    UNREADABLE_DELETION_VECTOR,
    CheckFinding,
    FooterReader,
    Severity,
)
from icecompat_writer.evidence.live_files import (
    SnapshotFacts,
    counted_from_footer,
    deletion_vector_findings,
    parse_files_option,
    selected_indexes,
    snapshot_facts,
)
from icecompat_writer.perf import gc_paused
from icecompat_writer.planning import get_profile
from icecompat_writer.rules import verdict
from icecompat_writer.rules.detection import WRITER_PROFILES, declared_profile, held_profile
from icecompat_writer.storage import FileIO, io_for

__all__ = [
    "DELETION_VECTOR_CARDINALITY",
    "JSON_FORMAT",
    "MISSING_DATA_FILE",
    "NUM_RECORDS_FROM_FOOTERS",
    "PATH_OUTSIDE_TABLE",
    "ROW_COUNT_MISMATCH",
    "SIZE_MISMATCH",
    "UNREADABLE_DATA_FILE",
    "UNREADABLE_DELETION_VECTOR",
    "UNREADABLE_TABLE_ERRORS",
    "WRITER_PROFILES",
    "CheckFinding",
    "Report",
    "Severity",
    "SnapshotFacts",
    "check_table",
    "counted_from_footer",
    "declared_profile",
    "held_profile",
    "parse_files_option",
    "reports_to_json",
    "snapshot_facts",
    "violation_file",
]

# The errors that mean "a file of this table cannot be read": the file system's (a vanished file, a
# directory where a file belongs, permissions), and the parsers' on the bytes a table file holds (JSON,
# text encodings, binary layouts, Parquet through pyarrow). Anything else out of the reader is a defect
# of the reader and propagates as it is: turning an AttributeError into "unreadable table" hides it.
UNREADABLE_TABLE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    json.JSONDecodeError,
    UnicodeDecodeError,
    struct.error,
    pyarrow.ArrowException,
)


def _unreadable(path: str | Path, e: BaseException) -> TableReadError:
    return TableReadError(
        f"cannot read the Delta log of {path}: a file of the table cannot be read or parsed "
        f"({type(e).__name__}: {str(e)[:200]})"
    )


def check_table(
    path: str | Path,
    profile: str | None = None,
    *,
    files: str = "all",
    version: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    io: FileIO | None = None,
    footer_reader: FooterReader | None = None,
) -> Report:
    """Check the table at ``path`` against ``profile`` (default: the one it declares), reading its
    files through ``io`` (default: :func:`~icecompat_writer.storage.io_for` the table's root, with the
    running session's store settings, else the environment's).

    Without a profile and with none declared, every profile is evaluated and ``candidates`` tells how
    many violations each has. ``files`` chooses which data files' footers are read: ``all``, ``none`` or
    ``sample:N``; the AddFile claims of every file (numRecords, deletion vectors) are checked whatever
    it says, and the deletion vectors of the selected files are read and verified.
    ``progress(done, total)`` is called as footers are read. ``footer_reader`` reads them (default:
    the one in force, :func:`~icecompat_writer.evidence.file_reads.footer_reader`; a session's
    executors with :class:`~icecompat_writer.jvm.footers.ExecutorFooterReader`). Raises
    :class:`~icecompat_writer.errors.TableReadError` when there is no readable table at ``path``,
    :class:`~icecompat_writer.planning.UnknownProfileError` for an unknown profile and
    :class:`~icecompat_writer.errors.IcecompatError` for a malformed ``files``.
    """
    parse_files_option(files)
    if profile is not None:
        get_profile(profile)  # refuse an unknown name before any file is read
    if io is None:
        io = io_for(path)
    # Replaying a big log allocates hundreds of thousands of small acyclic objects; the cyclic GC
    # would rescan all of them again and again (a quarter of the time at 100,000 AddFiles) and free
    # nothing. Footer reading, I/O-bound and possibly long, runs with the collector on.
    with gc_paused():
        try:
            snapshot = read_snapshot(path, version, io=io)
        except IcecompatError:
            raise
        except UNREADABLE_TABLE_ERRORS as e:
            raise _unreadable(path, e) from e
    declared = declared_profile(snapshot.metadata.configuration)
    chosen = profile or held_profile(snapshot.metadata.configuration, snapshot.protocol)
    try:
        seen = snapshot_facts(
            snapshot,
            files=files,
            progress=progress,
            every_file=False,
            footer_counts=True,
            reader=footer_reader,
        )
    except IcecompatError:
        raise
    except UNREADABLE_TABLE_ERRORS as e:  # live files are decoded lazily: damage may surface only here
        raise _unreadable(path, e) from e
    file_facts, findings = seen.facts, list(seen.findings)
    kind, n = parse_files_option(files)
    try:
        dv_findings, dvs_read = deletion_vector_findings(snapshot, selected_indexes(snapshot, kind, n))
    except IcecompatError:
        raise
    except UNREADABLE_TABLE_ERRORS as e:
        raise _unreadable(path, e) from e
    findings.extend(dv_findings)

    # An audit of the table as committed (without a profile, each one is a candidate)
    audit = verdict.decide(verdict.Audit(chosen, snapshot.metadata, snapshot.protocol, file_facts))
    return Report(
        table=str(snapshot.table_root),
        version=snapshot.version,
        profile=chosen,
        declared=declared,
        violations=audit.violations,
        findings=tuple(findings),
        files_total=len(snapshot.files),
        files_checked=seen.files_read,
        candidates=dict(audit.candidates),
        files_selected=seen.files_selected,
        files_option=files.strip().lower(),
        checkpoint_version=snapshot.checkpoint_version,
        deletion_vectors_read=dvs_read,
    )
