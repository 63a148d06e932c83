"""The live files of a snapshot as the file rules see them, and what could not be seen.

One :class:`~icecompat_writer.facts.DataFileFacts` per live AddFile (its claims, and its footer when
read), and a :class:`CheckFinding` for everything an auditor cannot vouch for: a log line skipped, a
data file or deletion vector missing or unreadable, a path leaving the table root, an AddFile that
disagrees with its file. Data files are only ever opened when their path, symlinks resolved, stays
inside the table root. On an object store (S3, GCS, Azure) the table is listed once, which gives
every object's size, and each footer then costs one ranged read of the object's tail, read in
parallel by a bounded pool (:func:`icecompat_writer.storage.map_bounded`). Where the footers are
read is a :class:`FooterReader`'s choice: this process's threads by default, or a Spark session's
executors (:mod:`icecompat_writer.jvm.footers`), which read slices of the same :class:`FooterJob`
with the same functions and return the same facts.

The checker (:func:`icecompat_writer.checking.check.check_table`), the Iceberg emitter's verification
and the upgrade all read a snapshot's files through :func:`snapshot_facts`, so that what one calls
compliant the others agree with.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icecompat_writer import storage
from icecompat_writer.deltalog.deletion_vectors import CARDINALITY, read_deletion_vectors
from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.deltalog.findings import FindingCode
from icecompat_writer.deltalog.paths import resolve_data_path, resolve_data_path_text
from icecompat_writer.deltalog.snapshot import Snapshot
from icecompat_writer.errors import IcecompatError
from icecompat_writer.evidence.file_reads import (
    DELETION_VECTOR_CARDINALITY,
    NUM_RECORDS_FROM_FOOTERS,
    PATH_OUTSIDE_TABLE,
    UNREADABLE_DELETION_VECTOR,
    CheckFinding,
    FileClaim,
    FooterJob,
    FooterReader,
    Severity,
    footer_reader,
)
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.perf import gc_paused

__all__ = [
    "SnapshotFacts",
    "counted_from_footer",
    "deletion_vector_findings",
    "footer_job",
    "parse_files_option",
    "selected_indexes",
    "snapshot_facts",
]


def parse_files_option(text: str) -> tuple[str, int]:
    """``all`` | ``none`` | ``sample:N`` -> (kind, N)."""
    t = text.strip().lower()
    if t in {"all", "none"}:
        return t, 0
    if t.startswith("sample:"):
        try:
            n = int(t.split(":", 1)[1])
        except ValueError:
            n = -1
        if n > 0:
            return "sample", n
    raise IcecompatError(f"--files takes all, none or sample:N (N > 0), not {text!r}")


def selected_indexes(snapshot: Snapshot, kind: str, n: int) -> range | set[int]:
    """Which live files get their footer read; a sample is seeded by the version (reproducible)."""
    total = len(snapshot.files)
    if kind == "none":
        return range(0)
    if kind == "sample" and n < total:
        return set(random.Random(snapshot.version).sample(range(total), n))
    return range(total)


def _outside_findings(snapshot: Snapshot) -> list[CheckFinding]:
    """Data and deletion vector paths that leave the table root, each naming its AddFile's path.

    The snapshot reports them too, but without the data file as a field; these replace its findings
    (same decision: the same resolver), and only have to be derived when it found any.
    """
    root = str(snapshot.table_root)
    out: list[CheckFinding] = []
    files = snapshot.files
    for add in files.get_many(files.outside_root()):
        if resolve_data_path_text(root, add.path) is None:
            out.append(
                CheckFinding(
                    PATH_OUTSIDE_TABLE,
                    f"data file path {add.path!r} resolves outside the table root; it was not opened",
                    file=add.path,
                )
            )
        dv = add.deletion_vector
        if (
            dv is not None
            and dv.storage_type == "p"
            and resolve_data_path_text(root, dv.path_or_inline_dv) is None
        ):
            out.append(
                CheckFinding(
                    PATH_OUTSIDE_TABLE,
                    f"the deletion vector of {add.path!r} is stored outside the table root "
                    f"({dv.path_or_inline_dv!r}); it was not opened",
                    file=add.path,
                )
            )
    return out


def _claims(add: AddFile) -> DataFileFacts:
    """What an AddFile claims, as the file rules take it (no footer).

    The same record :func:`~icecompat_writer.evidence.footers.file_facts` builds without a footer
    (a test keeps the two equal), built here directly because it is made for every live file: at
    100,000 AddFiles the keyword call through ``file_facts`` is a measurable part of the audit.
    """
    return DataFileFacts(
        add.path,
        add.partition_values,
        add.num_records,
        bool(add.stats),
        add.base_row_id,
        add.default_row_commit_version,
        add.deletion_vector is not None,
    )


def _claimed_facts(snapshot: Snapshot, selected: range | set[int]) -> dict[int, DataFileFacts]:
    """The claims (:func:`_claims`) of the files the file rules can say something about, by index.

    Those are the files whose footers are read and the files whose claims alone break a rule: no
    ``numRecords``, a deletion vector, or (row tracking on) no row ids. For any other file every file
    rule is silent (a rule that reads a footer skips a file without one), so its facts need not
    exist: at 100,000 files, building them all would cost more than the rest of a ``files="none"``
    check. The columns find all three without building an AddFile; a test holds every file rule of
    the catalog to this.
    """
    files = snapshot.files
    wanted = set(selected)
    wanted.update(files.missing_num_records())
    wanted.update(files.with_deletion_vectors())
    if str(snapshot.metadata.configuration.get("delta.enableRowTracking", "")).strip().lower() == "true":
        wanted.update(files.missing_row_ids())
    indices = sorted(wanted)
    return {i: _claims(add) for i, add in zip(indices, files.get_many(indices), strict=True)}


def footer_job(snapshot: Snapshot, adds: Sequence[AddFile]) -> FooterJob:
    """The job that reads ``adds``'s footers: on an object store with each file's size from one
    listing of the table (no HEAD per file)."""
    io, root = snapshot.io, snapshot.table_root
    claims = [FileClaim(add.path, add.size, add.num_records) for add in adds]
    if not io.remote:
        return FooterJob(root, io, [(claim, None) for claim in claims])
    listed = io.list_tree(root) if adds else []
    sizes = {storage.location_uri(e.location): e.size for e in listed}
    files: list[tuple[FileClaim, int | None]] = []
    for claim in claims:
        target = resolve_data_path(root, claim.path)
        files.append((claim, None if target is None else sizes.get(storage.location_uri(target))))
    return FooterJob(root, io, files)


def _read_footers(
    snapshot: Snapshot,
    facts: dict[int, DataFileFacts],
    selected: range | set[int],
    progress: Callable[[int, int], None] | None,
    reader: FooterReader,
) -> tuple[list[CheckFinding], int]:
    """Add the footers of the selected files to ``facts`` (in place); their findings, and how many read."""
    findings: list[CheckFinding] = []
    total = len(selected)
    read = 0
    order = sorted(selected)
    results = reader(footer_job(snapshot, snapshot.files.get_many(order)))
    for done, (i, (footer, problem)) in enumerate(zip(order, results, strict=True), 1):
        if footer is not None:
            facts[i] = dataclasses.replace(facts[i], footer=footer)
            read += 1
        elif problem is not None:
            facts[i] = dataclasses.replace(facts[i], footer_error=problem.message)
        if problem is not None:
            findings.append(problem)
        if progress is not None:
            progress(done, total)
    return findings, read


@dataclass(frozen=True)
class SnapshotFacts:
    """What the checker sees of a snapshot's live files: one :class:`DataFileFacts` per AddFile (in the
    snapshot's order; with its footer when read), and the findings of the log and the files."""

    facts: list[DataFileFacts]
    findings: tuple[CheckFinding, ...]
    files_selected: int
    files_read: int

    @property
    def errors(self) -> tuple[CheckFinding, ...]:
        return tuple(f for f in self.findings if f.blocking)


def snapshot_facts(
    snapshot: Snapshot,
    *,
    files: str = "all",
    progress: Callable[[int, int], None] | None = None,
    every_file: bool = True,
    footer_counts: bool = False,
    reader: FooterReader | None = None,
) -> SnapshotFacts:
    """The facts the file rules are evaluated on, and the findings of the log and the files.

    The footers of the files ``files`` selects (``all``, ``none``, ``sample:N``) are read, never
    leaving the table root. With ``every_file`` (the upgrade, which judges each file against the
    metadata it is about to commit) there is one fact per live file, in the snapshot's order; without
    it (the checker) only the facts a file rule can fail on are built (:func:`_claimed_facts`).

    With ``footer_counts`` (the checker), a file whose statistics the log lost (a checkpoint that
    keeps none, the commit that added the file cleaned up: ``Snapshot.stats_lost``) takes its row
    count from its Parquet footer, read for that even when ``files`` does not select it, and a
    warning says how many counts came from footers. A file whose commit is there and wrote no
    statistics keeps no count: that commit broke the rule. The upgrade counts no footer, so that it
    rewrites such files and the log carries the statistic again.

    ``reader`` reads the footers (default: :func:`footer_reader`, this process's threads unless an
    entry point installed a session's executors; the facts are the same wherever they are read).
    """
    reader = footer_reader() if reader is None else reader
    kind, n = parse_files_option(files)
    selected = selected_indexes(snapshot, kind, n)
    with gc_paused():
        if every_file:
            facts = {i: _claims(add) for i, add in enumerate(snapshot.add_files)}
        else:
            facts = _claimed_facts(snapshot, selected)
    findings = [
        CheckFinding.from_log(f) for f in snapshot.findings if f.code is not FindingCode.PATH_OUTSIDE_TABLE
    ]
    if len(findings) != len(snapshot.findings):
        findings.extend(_outside_findings(snapshot))
    file_findings, read = _read_footers(snapshot, facts, selected, progress, reader)
    findings.extend(file_findings)
    if footer_counts:
        extra_findings, extra_read = _count_from_footers(snapshot, facts, reader)
        findings.extend(extra_findings)
        read += extra_read
    return SnapshotFacts(list(facts.values()), tuple(findings), len(selected), read)


def counted_from_footer(fact: DataFileFacts, lost: frozenset[str]) -> DataFileFacts:
    """``fact`` with its footer's row count when the log lost its ``numRecords``, else unchanged.

    Only a file in ``lost`` (``Snapshot.stats_lost``: its statistics went with a checkpoint that keeps
    none and its adding commit is gone) and whose footer was read qualifies: a file whose commit is
    there and wrote no statistics broke the rule and keeps no count. The checker and the Iceberg
    emitter's gate both count this way, so that what one calls compliant the other converts.
    """
    if fact.num_records is not None or fact.footer is None or fact.path not in lost:
        return fact
    return dataclasses.replace(fact, num_records=fact.footer.num_rows)


def _count_from_footers(
    snapshot: Snapshot, facts: dict[int, DataFileFacts], reader: FooterReader
) -> tuple[list[CheckFinding], int]:
    """Give the files without ``numRecords`` their footer's row count (in place); the findings, and
    how many footers were read for it (those of files the ``files`` option did not select)."""
    lost = snapshot.stats_lost
    uncounted = [i for i, f in facts.items() if f.num_records is None and f.path in lost]
    if not uncounted:
        return [], 0
    unread = {i for i in uncounted if facts[i].footer is None and facts[i].footer_error is None}
    findings, read = _read_footers(snapshot, facts, unread, None, reader) if unread else ([], 0)
    counted = 0
    for i in uncounted:
        facts[i] = counted_from_footer(facts[i], lost)
        counted += facts[i].num_records is not None
    if counted:
        findings.append(
            CheckFinding(
                NUM_RECORDS_FROM_FOOTERS,
                f"the checkpoint of version {snapshot.checkpoint_version} keeps no statistics and the "
                f"commits that added {counted} live file(s) are gone; their row counts were read from "
                "their Parquet footers (an upgrade rewrites them so that the log has them again)",
                Severity.WARNING,
            )
        )
    return findings, read


def deletion_vector_findings(
    snapshot: Snapshot, selected: range | set[int]
) -> tuple[list[CheckFinding], int]:
    """Read and verify the deletion vectors of the selected live files: the findings, and how many read.

    Each DV is read once (the DVs of one file with as few ranged reads as their layout allows) and
    checked as an Iceberg reader would take it: its length, magic number, CRC-32 and bitmap, and its
    cardinality against the log's, because the Iceberg metadata copies that cardinality as the
    delete file's record count. A ``p`` DV outside the table root is already a ``path_outside_table``
    finding and is not opened.
    """
    files = snapshot.files
    wanted = set(selected)
    indices = [i for i in files.with_deletion_vectors() if i in wanted]
    if not indices:
        return [], 0
    root = str(snapshot.table_root)
    items = []
    for add in files.get_many(indices):
        dv = add.deletion_vector
        assert dv is not None
        if dv.storage_type == "p" and resolve_data_path_text(root, dv.path_or_inline_dv) is None:
            continue
        items.append((add.path, dv))
    read = read_deletion_vectors(snapshot.table_root, items, io=snapshot.io)
    out = [
        CheckFinding(
            DELETION_VECTOR_CARDINALITY if p.kind == CARDINALITY else UNREADABLE_DELETION_VECTOR,
            f"data file {p.data_path!r}: {p.message}",
            file=p.data_path,
        )
        for p in read.problems
    ]
    return out, len(read.vectors)
