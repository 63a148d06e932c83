"""Choosing the log files that make up one version, and reconciling their actions.

Selection (PROTOCOL.md "Checkpoints", "Log Compaction Files", "Last Checkpoint File"): the newest
complete checkpoint at or below the wanted version, then every commit after it. A multi-part checkpoint
with a missing part is never used. ``_last_checkpoint`` is only a hint: it is checked against the
directory listing, and the listing decides. A compaction file ``x.y.compacted.json`` stands in for the
commits ``x..y`` when it fits inside the range to replay, which also makes a version readable whose own
commit file is gone but is covered.

When the preferred checkpoint cannot be read (corrupt Parquet, a missing sidecar), the next older one
is tried, then a replay from version 0; only if nothing complete works is the newest option replayed
leniently, with every gap reported. Each step leaves a finding, so the checker can say what it saw.

Reconciliation ("Action Reconciliation"): latest protocol and metaData win; logical files are keyed by
``(path, deletionVector.uniqueId)``, the newest action per key wins and a remove deletes the key; the
latest ``txn`` per appId wins; the latest ``domainMetadata`` per domain wins and a ``removed`` one
deletes it. Actions of a commit are applied in file order, as delta-spark does. File actions are
collected as Arrow rows in log order and reconciled at the end in one vectorized pass
(:func:`~.columnar.reconcile`); the others are applied one by one as they come.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icecompat_writer import storage
from icecompat_writer.compat import indices_nonzero
from icecompat_writer.errors import TableReadError
from icecompat_writer.storage import FileIO, Location

from .actions import Protocol
from .columnar import FILE_ACTIONS_SCHEMA, fill_parsed, line_dv_key, line_rows, only_adds, reconcile
from .findings import FindingCode, LogFinding
from .parsed import ParsedColumns, render_json_stats, type_tree
from .paths import (
    DELTA_LOG_DIR,
    LAST_CHECKPOINT_FILE,
    SIDECARS_DIR,
    LogFile,
    LogFileKind,
    commit_file_name,
    list_log_entries,
    resolve_data_path,
)
from .readers import JsonActions, ParquetActions, read_json_actions, read_parquet_actions

__all__ = [
    "CheckpointCandidate",
    "LogListing",
    "ReplayResult",
    "list_log",
    "replay",
]

# Order of preference among checkpoints of one version: V2 (UUID-named) first, multi-part last.
_KIND_RANK = {
    LogFileKind.UUID_CHECKPOINT: 0,
    LogFileKind.CLASSIC_CHECKPOINT: 1,
    LogFileKind.MULTIPART_CHECKPOINT: 2,
}
_CATALOG_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})


@dataclass(frozen=True)
class CheckpointCandidate:
    """One complete checkpoint: a single file, or every part of a multi-part checkpoint in order."""

    version: int
    kind: LogFileKind
    files: tuple[LogFile, ...]


@dataclass
class LogListing:
    """What ``_delta_log`` holds, grouped for segment selection."""

    table_root: Location
    log_dir: Location
    io: FileIO
    names: frozenset[str] = frozenset()
    commits: dict[int, LogFile] = field(default_factory=dict)
    compactions: dict[int, list[LogFile]] = field(default_factory=dict)
    checkpoints: list[CheckpointCandidate] = field(default_factory=list)
    incomplete_checkpoints: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)

    def rel(self, path: Location) -> str:
        """``path`` relative to the table root, for findings."""
        rel = storage.relative_text(path, self.table_root)
        return str(path) if rel is None else rel

    @property
    def latest_version(self) -> int | None:
        """The newest version any file names (commit, complete checkpoint, compaction end)."""
        versions = list(self.commits)
        versions.extend(c.version for c in self.checkpoints)
        versions.extend(c.end_version for cs in self.compactions.values() for c in cs if c.end_version)
        return max(versions) if versions else None

    def version_exists(self, version: int) -> bool:
        """Whether ``version`` has a file of its own: its commit, a checkpoint, or a compaction end."""
        if version in self.commits or any(c.version == version for c in self.checkpoints):
            return True
        return any(c.end_version == version for cs in self.compactions.values() for c in cs)


def list_log(table_root: Location, *, io: FileIO) -> LogListing:
    """List and classify ``<table_root>/_delta_log`` (one listing through ``io``, which the listing
    keeps for every file the replay reads); TableReadError when there is no log."""
    log_dir = table_root / DELTA_LOG_DIR
    files, names = list_log_entries(log_dir, io=io)
    listing = LogListing(table_root=table_root, log_dir=log_dir, io=io, names=names)
    parts: dict[tuple[int, int], dict[int, LogFile]] = {}
    for lf in files:
        if lf.kind is LogFileKind.COMMIT:
            listing.commits[lf.version] = lf
        elif lf.kind is LogFileKind.COMPACTION:
            listing.compactions.setdefault(lf.version, []).append(lf)
        elif lf.kind is LogFileKind.MULTIPART_CHECKPOINT:
            assert lf.num_parts is not None and lf.part is not None
            parts.setdefault((lf.version, lf.num_parts), {})[lf.part] = lf
        elif lf.kind in (LogFileKind.CLASSIC_CHECKPOINT, LogFileKind.UUID_CHECKPOINT):
            listing.checkpoints.append(CheckpointCandidate(lf.version, lf.kind, (lf,)))
    for (version, num_parts), found in parts.items():
        if len(found) == num_parts:
            ordered = tuple(found[i] for i in range(1, num_parts + 1))
            listing.checkpoints.append(
                CheckpointCandidate(version, LogFileKind.MULTIPART_CHECKPOINT, ordered)
            )
        else:
            listing.incomplete_checkpoints.append((version, num_parts, tuple(sorted(found))))
    listing.checkpoints.sort(key=lambda c: (-c.version, _KIND_RANK[c.kind], c.files[0].name))
    return listing


@dataclass
class ReplayResult:
    """Reconciled actions of one version, before they are typed.

    ``files`` holds the live files as rows of :data:`~.columnar.FILE_ACTIONS_SCHEMA`, in dict order
    (see :func:`~.columnar.reconcile`); a row whose ``raw`` is set stands for ``raw_adds[raw]``, an
    ``add`` object as the log wrote it. Everything else is in the log's JSON shape.
    """

    version: int
    protocol: dict[str, Any] | None
    metadata: dict[str, Any] | None
    files: pa.Table
    raw_adds: list[dict[str, Any]]
    txns: dict[str, int]
    domains: dict[str, str]
    commit_info: dict[str, Any] | None
    checkpoint_version: int | None
    findings: list[LogFinding]
    stats_lost: frozenset[str] = frozenset()


class _CheckpointDamaged(Exception):
    """A checkpoint that cannot be used as a whole (strict mode only)."""

    def __init__(self, finding: LogFinding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class _FileActions:
    """File actions in log order: Arrow batches, and actions read as dicts turned into rows."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []
        self.raw_adds: list[dict[str, Any]] = []
        self._kinds: list[int] = []
        self._paths: list[str] = []
        self._dv_keys: list[str] = []
        self._raws: list[int | None] = []

    def add(self, path: str, dv: Any, action: dict[str, Any]) -> None:
        self._kinds.append(1)
        self._paths.append(path)
        self._dv_keys.append(line_dv_key(dv))
        self._raws.append(len(self.raw_adds))
        self.raw_adds.append(action)

    def remove(self, path: str, dv: Any) -> None:
        self._kinds.append(0)
        self._paths.append(path)
        self._dv_keys.append(line_dv_key(dv))
        self._raws.append(None)

    def extend(self, batch: pa.RecordBatch) -> None:
        self._flush()
        if batch.num_rows:
            self.batches.append(batch)

    def _flush(self) -> None:
        if self._kinds:
            self.batches.append(line_rows(self._kinds, self._paths, self._dv_keys, self._raws))
            self._kinds, self._paths, self._dv_keys, self._raws = [], [], [], []

    def live(self) -> pa.Table:
        """The reconciled live rows."""
        self._flush()
        return reconcile(pa.Table.from_batches(self.batches, schema=FILE_ACTIONS_SCHEMA))


class _State:
    """The reconciliation state while replaying: non-file actions in the log's own JSON shapes."""

    def __init__(self) -> None:
        self.protocol: dict[str, Any] | None = None
        self.metadata: dict[str, Any] | None = None
        self.files = _FileActions()
        self.txns: dict[str, int] = {}
        self.domains: dict[str, str] = {}
        self.commit_info: dict[str, Any] | None = None
        self.stats_dropped = False  # the checkpoint read kept no statistics at all (see ParquetActions)

    def apply(
        self,
        actions: list[tuple[str, dict[str, Any]]],
        display: str,
        findings: list[LogFinding],
        *,
        capture_commit_info: bool = False,
    ) -> None:
        files = self.files
        for name, a in actions:
            if name == "add" or name == "remove":
                path = a.get("path")
                dv = a.get("deletionVector")
                if not isinstance(path, str) or not path or not (dv is None or isinstance(dv, dict)):
                    findings.append(
                        LogFinding(
                            FindingCode.INVALID_ACTION,
                            f"{name} action without a usable path/deletionVector was skipped",
                            display,
                        )
                    )
                    continue
                if name == "add":
                    files.add(path, dv, a)
                else:
                    files.remove(path, dv)
            elif name == "metaData":
                self.metadata = a
            elif name == "protocol":
                try:
                    Protocol.from_json(a)  # what the snapshot will build: refuse damage here, per line
                except ValueError as e:
                    findings.append(
                        LogFinding(FindingCode.INVALID_ACTION, f"protocol action was skipped: {e}", display)
                    )
                    continue
                self.protocol = a
            elif name == "txn":
                app_id, version = a.get("appId"), a.get("version")
                if isinstance(app_id, str) and isinstance(version, int) and not isinstance(version, bool):
                    self.txns[app_id] = version
                else:
                    findings.append(
                        LogFinding(FindingCode.INVALID_ACTION, "txn action without appId/version", display)
                    )
            elif name == "domainMetadata":
                domain = a.get("domain")
                if not isinstance(domain, str):
                    findings.append(
                        LogFinding(
                            FindingCode.INVALID_ACTION, "domainMetadata action without domain", display
                        )
                    )
                elif a.get("removed"):
                    self.domains.pop(domain, None)
                else:
                    configuration = a.get("configuration")
                    self.domains[domain] = configuration if isinstance(configuration, str) else ""
            elif name == "commitInfo":
                if capture_commit_info:
                    self.commit_info = a
            # cdc, checkpointMetadata, sidecar and unknown actions do not take part in replay.

    def add_checkpoint_files(self, adds: list[pa.RecordBatch | list[dict[str, Any]]]) -> None:
        """Adds of a checkpoint (rows, or dicts): already reconciled, so each simply takes its key."""
        files = self.files
        for part in adds:
            if isinstance(part, pa.RecordBatch):
                files.extend(part)
                continue
            for a in part:
                path = a.get("path")
                if isinstance(path, str):
                    files.add(path, a.get("deletionVector"), a)


def replay(listing: LogListing, version: int | None = None) -> ReplayResult:
    """Reconcile the log up to ``version`` (latest when None); see the module docstring."""
    latest = listing.latest_version
    if latest is None:
        raise TableReadError(f"not a Delta table: {listing.log_dir} holds no commit or checkpoint")
    if version is None:
        target = latest
    else:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise TableReadError(f"invalid table version {version!r}")
        if version > latest:
            raise TableReadError(f"version {version} does not exist; the latest version is {latest}")
        if not listing.version_exists(version):
            raise TableReadError(
                f"version {version} cannot be read: neither its commit file, a checkpoint nor a "
                f"compaction file for it is in {listing.log_dir}"
            )
        target = version
    findings: list[LogFinding] = []
    _check_last_checkpoint(listing, findings)

    # Newest checkpoint first, then a replay from version 0 (possible only if the log starts there).
    # Covers are computed lazily: with a healthy log the first candidate is the only one looked at.
    candidates: list[CheckpointCandidate | None] = [c for c in listing.checkpoints if c.version <= target]
    if 0 in listing.commits or 0 in listing.compactions:
        candidates.append(None)
    if not candidates:
        raise TableReadError(
            f"version {target} cannot be reconstructed: there is no checkpoint at or below it and "
            f"the log does not start at version 0 (commit {commit_file_name(0)} is missing; the log "
            "was cleaned up or damaged)"
        )

    used: tuple[CheckpointCandidate | None, _State] | None = None
    first_cover: tuple[list[LogFile], list[tuple[int, int]]] | None = None
    for cand in candidates:
        files, missing = _cover(listing, 0 if cand is None else cand.version + 1, target)
        if first_cover is None:
            first_cover = (files, missing)
        if missing:
            continue
        try:
            state = _run(listing, cand, files, target, findings, strict=True)
        except _CheckpointDamaged as damaged:
            findings.append(damaged.finding)
            continue
        used = (cand, state)
        break
    if used is None:
        # Nothing complete works: replay the newest option leniently and report every gap.
        assert first_cover is not None
        files, missing = first_cover
        state = _run(listing, candidates[0], files, target, findings, strict=False)
        _report_missing(listing, missing, findings)
        used = (candidates[0], state)
    cand, state = used
    cp_version = None if cand is None else cand.version
    for version_, num_parts, present in listing.incomplete_checkpoints:
        if version_ <= target and (cp_version is None or version_ > cp_version):
            findings.append(
                LogFinding(
                    FindingCode.INCOMPLETE_CHECKPOINT,
                    f"multi-part checkpoint of version {version_} has {len(present)} of {num_parts} "
                    f"parts (present: {list(present)}); it was not used",
                    f"{DELTA_LOG_DIR}/{version_:020d}.checkpoint.*.{num_parts:010d}.parquet",
                )
            )
    if state.commit_info is None and target in listing.commits:
        state.commit_info = _read_commit_info(listing, listing.commits[target])
    if state.protocol is not None:
        features = set(state.protocol.get("readerFeatures") or ()) | set(
            state.protocol.get("writerFeatures") or ()
        )
        if features & _CATALOG_FEATURES:
            findings.append(
                LogFinding(
                    FindingCode.CATALOG_MANAGED,
                    "the table is catalog-managed; ratified commits that are not yet published to "
                    "_delta_log are not seen by this reader",
                )
            )
    live, lost = _recover_stats(listing, cand, state, findings)
    unique: dict[LogFinding, None] = dict.fromkeys(findings)  # a lenient re-read repeats strict findings
    return ReplayResult(
        version=target,
        protocol=state.protocol,
        metadata=state.metadata,
        files=live,
        raw_adds=state.files.raw_adds,
        txns=state.txns,
        domains=state.domains,
        commit_info=state.commit_info,
        checkpoint_version=cp_version,
        findings=list(unique),
        stats_lost=lost,
    )


def _cover(listing: LogListing, start: int, target: int) -> tuple[list[LogFile], list[tuple[int, int]]]:
    """Commit or compaction files covering ``start..target`` in order, and the ranges nothing covers.

    A compaction is used when it starts exactly where the next version is needed and ends inside the
    range (the longest such one): it replaces its commits, as the protocol allows.

    The walk jumps from one version that has a file to the next, so it costs O(files) whatever the
    versions are: a stray commit named 00000000999999999999.json must give one missing range, not a
    trillion steps and a list of every missing version.
    """
    files: list[LogFile] = []
    missing: list[tuple[int, int]] = []
    present = sorted(
        {v for v in listing.commits if start <= v <= target}
        | {v for v in listing.compactions if start <= v <= target}
    )
    i = 0
    v = start
    while v <= target:
        i = bisect.bisect_left(present, v, i)
        if i == len(present):
            _add_range(missing, v, target)
            break
        if present[i] > v:
            _add_range(missing, v, present[i] - 1)
            v = present[i]
        best: LogFile | None = None
        for c in listing.compactions.get(v, ()):
            assert c.end_version is not None
            if c.end_version <= target and (best is None or c.end_version > (best.end_version or 0)):
                best = c
        if best is not None and best.end_version is not None:
            files.append(best)
            v = best.end_version + 1
        elif v in listing.commits:
            files.append(listing.commits[v])
            v += 1
        else:  # only a compaction that reaches beyond the target starts here
            _add_range(missing, v, v)
            v += 1
    return files, missing


def _add_range(ranges: list[tuple[int, int]], first: int, last: int) -> None:
    """Append ``first..last`` to ascending ``ranges``, merged with the last one when adjacent."""
    if ranges and ranges[-1][1] == first - 1:
        ranges[-1] = (ranges[-1][0], last)
    else:
        ranges.append((first, last))


def _commits_in(listing: LogListing, first: int, last: int) -> list[int]:
    """The versions ``first..last`` that have a commit file, ascending (O(commits), not O(range))."""
    return sorted(v for v in listing.commits if first <= v <= last)


def _run(
    listing: LogListing,
    cand: CheckpointCandidate | None,
    files: list[LogFile],
    target: int,
    findings: list[LogFinding],
    *,
    strict: bool,
) -> _State:
    state = _State()
    if cand is not None:
        _read_checkpoint(listing, cand, state, findings, strict=strict)
    for lf in files:
        if lf.kind is LogFileKind.COMPACTION:
            _apply_compaction(listing, lf, state, target, findings)
        else:
            _apply_commit(listing, lf, state, target, findings)
    return state


def _apply_commit(
    listing: LogListing, lf: LogFile, state: _State, target: int, findings: list[LogFinding]
) -> None:
    display = listing.rel(lf.path)
    try:
        read = read_json_actions(lf.path, display, io=listing.io)
    except OSError as e:
        findings.append(
            LogFinding(FindingCode.UNREADABLE_FILE, f"commit {lf.version} could not be read: {e}", display)
        )
        return
    findings.extend(read.findings)
    state.apply(read.actions, display, findings, capture_commit_info=lf.version == target)
    if read.files is not None:
        state.files.extend(read.files)


def _apply_compaction(
    listing: LogListing, lf: LogFile, state: _State, target: int, findings: list[LogFinding]
) -> None:
    """Apply a compaction file, or its commits when it is damaged and they all still exist."""
    assert lf.end_version is not None
    display = listing.rel(lf.path)
    # never iterate the range itself: a compaction's name may claim a trillion versions
    in_range = _commits_in(listing, lf.version, lf.end_version)
    commits_present = len(in_range) == lf.end_version - lf.version + 1
    try:
        read = read_json_actions(lf.path, display, io=listing.io)
        problem = read.findings[0].message if read.findings else None
    except OSError as e:
        read, problem = None, str(e)
    if problem is not None and commits_present:
        findings.append(
            LogFinding(
                FindingCode.DAMAGED_COMPACTION,
                f"compaction file for versions {lf.version}..{lf.end_version} is damaged ({problem}); "
                "the commit files were read instead",
                display,
            )
        )
        for v in in_range:
            _apply_commit(listing, listing.commits[v], state, target, findings)
        return
    if read is None:
        gaps: list[tuple[int, int]] = []
        after = lf.version
        for v in [*in_range, lf.end_version + 1]:
            if v > after:
                gaps.append((after, v - 1))
            after = v + 1
        findings.append(
            LogFinding(
                FindingCode.UNREADABLE_FILE,
                f"compaction file could not be read ({problem}) and versions "
                f"{_render_ranges(gaps)} have no commit file",
                display,
            )
        )
        for v in in_range:
            _apply_commit(listing, listing.commits[v], state, target, findings)
        return
    findings.extend(read.findings)
    state.apply(read.actions, display, findings)
    if read.files is not None:
        state.files.extend(read.files)


class _Damage:
    """Damage met while loading a checkpoint: raised at once (:class:`_CheckpointDamaged`) in strict
    mode, so the caller can try another checkpoint; kept as findings in lenient mode."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.found: list[LogFinding] = []

    def __call__(self, code: FindingCode, message: str, display: str) -> None:
        finding = LogFinding(code, message, display)
        if self.strict:
            raise _CheckpointDamaged(finding)
        self.found.append(finding)


@dataclass
class _CheckpointContent:
    """What the files of one checkpoint hold, gathered before any of it is applied to the state."""

    non_file: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    adds: list[pa.RecordBatch | list[dict[str, Any]]] = field(default_factory=list)
    typed: dict[int, ParsedColumns] = field(default_factory=dict)  # index in adds -> typed columns
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    stats_dropped: bool = False

    def take(self, parquet: ParquetActions) -> None:
        self.stats_dropped |= parquet.stats_dropped
        if parquet.parsed is not None:
            self.typed.update((len(self.adds) + i, p) for i, p in enumerate(parquet.parsed))
        self.adds.extend(parquet.adds)


def _read_checkpoint(
    listing: LogListing,
    cand: CheckpointCandidate,
    state: _State,
    findings: list[LogFinding],
    *,
    strict: bool,
) -> None:
    """Load a checkpoint (all parts, and sidecars of a V2 one) into ``state``.

    In strict mode any damage raises :class:`_CheckpointDamaged` before ``state`` is touched, so the
    caller can try another checkpoint; in lenient mode damage becomes findings and what could be read
    is used.
    """
    damage = _Damage(strict)
    content = _CheckpointContent()
    for lf in cand.files:
        if lf.file_format == "json":
            _read_json_part(listing, lf, content, damage)
        else:
            _read_parquet_part(listing, lf, content, damage)
    first = listing.rel(cand.files[0].path)
    _read_sidecars(listing, content, first, damage)
    _check_checkpoint_actions(cand, content.non_file, first, damage)
    if content.typed:
        _fill_typed(content)
    findings.extend(damage.found)
    state.stats_dropped |= content.stats_dropped
    state.apply(content.non_file, first, findings)
    state.add_checkpoint_files(content.adds)


def _read_json_part(listing: LogListing, lf: LogFile, content: _CheckpointContent, damage: _Damage) -> None:
    """One JSON checkpoint file (a V2 checkpoint) into ``content``."""
    display = listing.rel(lf.path)
    try:
        read = read_json_actions(lf.path, display, io=listing.io)
    except OSError as e:
        damage(FindingCode.UNREADABLE_CHECKPOINT, f"checkpoint could not be read: {e}", display)
        return
    if read.findings:
        damage(
            FindingCode.UNREADABLE_CHECKPOINT,
            f"checkpoint has {len(read.findings)} damaged line(s), first at line {read.findings[0].line}",
            display,
        )
    if read.files is not None:
        content.adds.append(only_adds(read.files))
    as_dicts: list[dict[str, Any]] = []
    content.adds.append(as_dicts)
    for name, a in read.actions:
        if name == "add":
            parsed = a.get("stats_parsed")
            if a.get("stats") is None and isinstance(parsed, dict):
                a["stats"] = render_json_stats(parsed)  # writeStatsAsJson=false, JSON form
            as_dicts.append(a)
        elif name == "sidecar":
            content.sidecars.append(a)
        elif name != "remove":
            content.non_file.append((name, a))


def _read_parquet_part(
    listing: LogListing, lf: LogFile, content: _CheckpointContent, damage: _Damage
) -> None:
    """One Parquet checkpoint file (classic, one part of a multi-part, or a V2 one) into ``content``."""
    display = listing.rel(lf.path)
    try:
        parquet = read_parquet_actions(lf.path, io=listing.io)
    except (OSError, pa.ArrowException, ValueError) as e:
        damage(FindingCode.UNREADABLE_CHECKPOINT, f"checkpoint could not be read: {e}", display)
        return
    content.take(parquet)
    for name, a in parquet.non_file:
        if name == "sidecar":
            content.sidecars.append(a)
        else:
            content.non_file.append((name, a))


def _read_sidecars(listing: LogListing, content: _CheckpointContent, first: str, damage: _Damage) -> None:
    """The sidecar files a V2 checkpoint names, each only from inside ``_delta_log/_sidecars``."""
    sidecar_dir = listing.log_dir / SIDECARS_DIR
    for sc in content.sidecars:
        raw_path = sc.get("path")
        target = resolve_data_path(sidecar_dir, raw_path) if isinstance(raw_path, str) else None
        if target is None:
            damage(
                FindingCode.UNREADABLE_SIDECAR,
                f"sidecar path {raw_path!r} is not inside {DELTA_LOG_DIR}/{SIDECARS_DIR}",
                first,
            )
            continue
        try:
            content.take(read_parquet_actions(target, io=listing.io))
        except (OSError, pa.ArrowException, ValueError) as e:
            damage(FindingCode.UNREADABLE_SIDECAR, f"sidecar {raw_path!r} could not be read: {e}", first)


def _check_checkpoint_actions(
    cand: CheckpointCandidate, non_file: list[tuple[str, dict[str, Any]]], first: str, damage: _Damage
) -> None:
    """A checkpoint without protocol or metaData is damaged; a V2 checkpoint's ``checkpointMetadata``
    that is missing or names another version is a finding (the checkpoint is still used)."""
    names = {name for name, _ in non_file}
    for required in ("protocol", "metaData"):
        if required not in names:
            damage(FindingCode.UNREADABLE_CHECKPOINT, f"checkpoint has no {required} action", first)
    cp_meta = [a for name, a in non_file if name == "checkpointMetadata"]
    if cand.kind is LogFileKind.UUID_CHECKPOINT and not cp_meta:
        damage.found.append(
            LogFinding(
                FindingCode.INVALID_CHECKPOINT,
                "UUID-named (V2) checkpoint has no checkpointMetadata action",
                first,
            )
        )
    for meta in cp_meta:
        if meta.get("version") not in (None, cand.version):
            damage.found.append(
                LogFinding(
                    FindingCode.INVALID_CHECKPOINT,
                    f"checkpointMetadata says version {meta.get('version')}, the file name says "
                    f"{cand.version}",
                    first,
                )
            )


def _fill_typed(content: _CheckpointContent) -> None:
    """Render the typed ``stats_parsed`` / ``partitionValues_parsed`` columns of the adds that carry
    them into the JSON forms, with the types of the checkpoint's own schema."""
    meta: dict[str, Any] = next((a for name, a in reversed(content.non_file) if name == "metaData"), {})
    schema = _schema_of(meta)
    configuration = meta.get("configuration")
    tree = type_tree(schema, configuration if isinstance(configuration, dict) else {})
    for i, columns in content.typed.items():
        content.adds[i] = fill_parsed(content.adds[i], columns, tree)


def _recover_stats(
    listing: LogListing,
    cand: CheckpointCandidate | None,
    state: _State,
    findings: list[LogFinding],
) -> tuple[pa.Table, frozenset[str]]:
    """``live`` with the stats of files the checkpoint kept none for taken from their commit files.

    A checkpoint of a table with ``delta.checkpoint.writeStatsAsJson=false`` and
    ``delta.checkpoint.writeStatsAsStruct=false`` drops every file's statistics, though the commit
    that added each file wrote them. The commit files still present at or below the checkpoint are
    read, newest first, until every such file is found (a file's ``numRecords`` counts its physical
    rows, so the newest add of the same path with stats is the one to take; it may have had another
    deletion vector). Replaced ``raw_adds`` entries are copies; the log's own dicts are not changed.

    Also returns the paths whose statistics are lost: the checkpoint dropped every file's statistics
    and no commit still present added the file. Nothing in the log says whether they had any; their
    data files still know their row counts (the checker reads them there).
    """
    live = state.files.live()
    raw_adds = state.files.raw_adds
    if cand is None or live.num_rows == 0:
        return live, frozenset()
    stats = live.column("stats")
    raw = live.column("raw")
    from_columns = indices_nonzero(pc.and_(pc.is_null(stats), pc.is_null(raw))).to_pylist()
    from_raw = [
        (i, r)
        for i, r in zip(
            indices_nonzero(raw.is_valid()).to_pylist(), raw.drop_null().to_pylist(), strict=True
        )
        if raw_adds[r].get("stats") is None
    ]
    if not from_columns and not from_raw:
        return live, frozenset()
    keys = live.column("key_path")
    wanted: set[str] = {raw_adds[r]["path"] for _, r in from_raw}
    column_paths = [
        k.decode("utf-8", "surrogatepass") for k in keys.take(pa.array(from_columns, pa.int64())).to_pylist()
    ]
    wanted.update(column_paths)
    found: dict[str, str] = {}
    seen: set[str] = set()  # paths some present commit adds, with stats or without
    for version in sorted((v for v in listing.commits if v <= cand.version), reverse=True):
        try:
            commit_path = listing.commits[version].path
            read = read_json_actions(commit_path, listing.rel(commit_path), io=listing.io)
        except OSError:
            continue
        in_commit: dict[str, str] = {}
        for path, text in _added_stats(read):
            if path in wanted:
                seen.add(path)
                if text is not None and path not in found:
                    in_commit[path] = text
        found.update(in_commit)
        if len(found) == len(wanted):
            break
    lost = frozenset(wanted - seen) if state.stats_dropped else frozenset()
    if not found:
        return live, lost
    recovered = 0
    if from_columns:
        values: list[str | None] = [None] * live.num_rows
        for i, path in zip(from_columns, column_paths, strict=True):
            hit = found.get(path)
            values[i] = hit
            recovered += hit is not None
        column = live.schema.get_field_index("stats")
        live = live.set_column(
            column, live.schema.field(column), pc.coalesce(stats, pa.array(values, pa.string()))
        )
    for _, r in from_raw:
        raw_text = found.get(raw_adds[r]["path"])
        if raw_text is not None:
            raw_adds[r] = {**raw_adds[r], "stats": raw_text}
            recovered += 1
    findings.append(
        LogFinding(
            FindingCode.STATS_FROM_COMMITS,
            f"the checkpoint of version {cand.version} has no statistics for {recovered} live file(s); "
            "they were taken from the commit files that added them",
            listing.rel(cand.files[0].path),
        )
    )
    return live, lost


def _added_stats(read: JsonActions) -> list[tuple[str, str | None]]:
    """``(path, stats)`` of the adds of one JSON file, in file order (stats None: it has none)."""
    out: list[tuple[str, str | None]] = []
    if read.files is not None:
        rows = read.files.filter(pc.fill_null(pc.equal(read.files.column("kind"), 1), False))
        out.extend(zip(rows.column("path").to_pylist(), rows.column("stats").to_pylist(), strict=True))
    for name, a in read.actions:
        if name == "add" and isinstance(a.get("path"), str):
            stats = a.get("stats")
            out.append((a["path"], stats if isinstance(stats, str) else None))
    return out


def _schema_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The parsed ``schemaString`` of a ``metaData`` action (None when it has none that parses)."""
    text = meta.get("schemaString")
    if not isinstance(text, str):
        return None
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return schema if isinstance(schema, dict) else None


def _read_commit_info(listing: LogListing, lf: LogFile) -> dict[str, Any] | None:
    """The commitInfo of one commit (checkpoints and compactions do not keep it)."""
    try:
        read = read_json_actions(lf.path, listing.rel(lf.path), io=listing.io)
    except OSError:
        return None
    for name, a in read.actions:
        if name == "commitInfo":
            return a
    return None


def _report_missing(listing: LogListing, missing: list[tuple[int, int]], findings: list[LogFinding]) -> None:
    for start, end in missing:
        span = f"version {start}" if start == end else f"versions {start}..{end}"
        findings.append(
            LogFinding(
                FindingCode.MISSING_COMMIT,
                f"{span} missing from the log and not covered by a compaction file; the snapshot "
                "lacks their changes",
                f"{DELTA_LOG_DIR}/{commit_file_name(start)}",
            )
        )


def _render_ranges(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in ranges)


def _check_last_checkpoint(listing: LogListing, findings: list[LogFinding]) -> None:
    """Verify the ``_last_checkpoint`` hint against the listing; a wrong hint is only a finding."""
    path = listing.log_dir / LAST_CHECKPOINT_FILE
    display = listing.rel(path)
    if listing.io.is_remote(path) and LAST_CHECKPOINT_FILE not in listing.names:
        return  # the listing says it is not there: no request for it
    try:
        text = listing.io.new_input(path).read()  # local: a named pipe here would block the reader forever
    except FileNotFoundError:
        return
    except OSError as e:
        findings.append(LogFinding(FindingCode.UNREADABLE_LAST_CHECKPOINT, f"cannot read it: {e}", display))
        return
    try:
        obj = json.loads(text)
    except ValueError as e:
        findings.append(
            LogFinding(FindingCode.UNREADABLE_LAST_CHECKPOINT, f"not valid JSON ({e}); ignored", display)
        )
        return
    except RecursionError:  # json.loads recurses per nesting level; the hint is only a hint
        findings.append(
            LogFinding(
                FindingCode.UNREADABLE_LAST_CHECKPOINT, "JSON nested too deeply to decode; ignored", display
            )
        )
        return
    version = obj.get("version") if isinstance(obj, dict) else None
    if isinstance(version, bool) or not isinstance(version, int):
        findings.append(
            LogFinding(FindingCode.UNREADABLE_LAST_CHECKPOINT, "no integer 'version'; ignored", display)
        )
        return
    assert isinstance(obj, dict)
    parts = obj.get("parts")
    v2 = obj.get("v2Checkpoint")
    v2_name = v2.get("path") if isinstance(v2, dict) else None
    at_version = [c for c in listing.checkpoints if c.version == version]
    if isinstance(v2_name, str):
        ok = any(c.files[0].name == v2_name.rsplit("/", 1)[-1] for c in at_version)
        wanted = f"V2 checkpoint {v2_name}"
    elif isinstance(parts, int) and parts > 1:
        ok = any(c.kind is LogFileKind.MULTIPART_CHECKPOINT and len(c.files) == parts for c in at_version)
        wanted = f"{parts}-part checkpoint of version {version}"
    else:
        ok = bool(at_version)
        wanted = f"checkpoint of version {version}"
    if not ok:
        findings.append(
            LogFinding(
                FindingCode.STALE_LAST_CHECKPOINT,
                f"names the {wanted}, which is not (completely) in the log; the directory listing "
                "was used instead",
                display,
            )
        )
