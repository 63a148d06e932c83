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
from dataclasses import dataclass

import pyarrow as pa

from icecompat_writer.errors import TableReadError
from icecompat_writer.schema import JsonDict

from .checkpoints import CheckpointDamaged, read_checkpoint, recover_stats
from .findings import FindingCode, LogFinding
from .listing import CheckpointCandidate, LogListing, list_log
from .paths import (
    DELTA_LOG_DIR,
    LAST_CHECKPOINT_FILE,
    LogFile,
    LogFileKind,
    commit_file_name,
)
from .readers import read_json_actions
from .replay_state import ReplayState

__all__ = [
    "CheckpointCandidate",
    "LogListing",
    "ReplayResult",
    "list_log",
    "replay",
]

_CATALOG_FEATURES = frozenset({"catalogManaged", "catalogOwned-preview"})


@dataclass
class ReplayResult:
    """Reconciled actions of one version, before they are typed.

    ``files`` holds the live files as rows of :data:`~.columnar.FILE_ACTIONS_SCHEMA`, in dict order
    (see :func:`~.columnar.reconcile`); a row whose ``raw`` is set stands for ``raw_adds[raw]``, an
    ``add`` object as the log wrote it. Everything else is in the log's JSON shape.
    """

    version: int
    protocol: JsonDict | None
    metadata: JsonDict | None
    files: pa.Table
    raw_adds: list[JsonDict]
    txns: dict[str, int]
    domains: dict[str, str]
    commit_info: JsonDict | None
    checkpoint_version: int | None
    findings: list[LogFinding]
    stats_lost: frozenset[str] = frozenset()


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

    used: tuple[CheckpointCandidate | None, ReplayState] | None = None
    first_cover: tuple[list[LogFile], list[tuple[int, int]]] | None = None
    for cand in candidates:
        files, missing = _cover(listing, 0 if cand is None else cand.version + 1, target)
        if first_cover is None:
            first_cover = (files, missing)
        if missing:
            continue
        try:
            state = _run(listing, cand, files, target, findings, strict=True)
        except CheckpointDamaged as damaged:
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
    live, lost = recover_stats(listing, cand, state, findings)
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
) -> ReplayState:
    state = ReplayState()
    if cand is not None:
        read_checkpoint(listing, cand, state, findings, strict=strict)
    for lf in files:
        if lf.kind is LogFileKind.COMPACTION:
            _apply_compaction(listing, lf, state, target, findings)
        else:
            _apply_commit(listing, lf, state, target, findings)
    return state


def _apply_commit(
    listing: LogListing, lf: LogFile, state: ReplayState, target: int, findings: list[LogFinding]
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
    listing: LogListing, lf: LogFile, state: ReplayState, target: int, findings: list[LogFinding]
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


def _read_commit_info(listing: LogListing, lf: LogFile) -> JsonDict | None:
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
    if listing.io.remote and LAST_CHECKPOINT_FILE not in listing.names:
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
