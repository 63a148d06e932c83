"""Reading one checkpoint into the replay state: its JSON or Parquet parts and sidecars, the actions
it must hold, its typed columns, and the statistics a checkpoint dropped, taken back from the commit
files still there.

In strict mode the first damage raises :class:`CheckpointDamaged`, so that the replay can try an
older checkpoint; in lenient mode every problem is kept as a finding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icecompat_writer.compat import indices_nonzero

from .columnar import fill_parsed, only_adds
from .findings import FindingCode, LogFinding
from .listing import CheckpointCandidate, LogListing
from .parsed import ParsedColumns, render_json_stats, type_tree
from .paths import (
    DELTA_LOG_DIR,
    SIDECARS_DIR,
    LogFile,
    LogFileKind,
    resolve_data_path,
)
from .readers import JsonActions, ParquetActions, read_json_actions, read_parquet_actions
from .replay_state import ReplayState

__all__ = ["CheckpointDamaged", "read_checkpoint", "recover_stats"]


class CheckpointDamaged(Exception):
    """A checkpoint that cannot be used as a whole (strict mode only)."""

    def __init__(self, finding: LogFinding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class _Damage:
    """Damage met while loading a checkpoint: raised at once (:class:`CheckpointDamaged`) in strict
    mode, so the caller can try another checkpoint; kept as findings in lenient mode."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.found: list[LogFinding] = []

    def __call__(self, code: FindingCode, message: str, display: str) -> None:
        finding = LogFinding(code, message, display)
        if self.strict:
            raise CheckpointDamaged(finding)
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


def read_checkpoint(
    listing: LogListing,
    cand: CheckpointCandidate,
    state: ReplayState,
    findings: list[LogFinding],
    *,
    strict: bool,
) -> None:
    """Load a checkpoint (all parts, and sidecars of a V2 one) into ``state``.

    In strict mode any damage raises :class:`CheckpointDamaged` before ``state`` is touched, so the
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


def recover_stats(
    listing: LogListing,
    cand: CheckpointCandidate | None,
    state: ReplayState,
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
