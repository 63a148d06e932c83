"""What an upgrade of an existing table to a profile must commit, decided without Spark.

An upgrade is planned from one snapshot: the planner makes the table's own metadata and protocol
compliant (exactly as it does for a write that adds nothing), then every live data file is judged by
the file rules against that *planned* state, footers included, and the files that fall short are the
ones to rewrite. Two shapes come out of it:

- **in place** (the common case): the metadata and protocol change, only the short files are
  rewritten, every other file stays where it is. When the plan turns row tracking on, files without
  row ids are re-added unchanged in the same commit so that Delta gives them ids (the protocol wants
  every live file to have them in the version that enables row tracking).
- **a new table state**: when the profile needs something Delta will not change on an existing table
  (column mapping ``id`` mode on a table in ``none`` or ``name`` mode, ``col-<id>`` physical names on
  columns that have other names, a type-change history Iceberg cannot apply), the table gets a new
  state in the same single commit, as a REPLACE would: every column keeps its id where it has a valid
  one, is named ``col-<id>``, and every row is rewritten.

Refusals come from the planner (:class:`~icecompat_writer.errors.CompatViolation`: what no rewrite can
fix, such as a type or a table feature the profile forbids) or from the upgrade itself
(:class:`~icecompat_writer.errors.UpgradeRefused`, rules ``UPGRADE-*``, see ``docs/upgrade.md``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from icecompat_writer.checking.report import violation_file
from icecompat_writer.deltalog import AddFile, Metadata, TableState, read_snapshot
from icecompat_writer.errors import CompatViolation, IcecompatError, UpgradeRefused, Violation
from icecompat_writer.evidence.file_reads import CheckFinding
from icecompat_writer.evidence.live_files import snapshot_facts
from icecompat_writer.planning import Change, Plan, get_profile, plan
from icecompat_writer.rules import verdict
from icecompat_writer.rules.catalog import RULES_BY_ID, layer_violation
from icecompat_writer.rules.context import CM_MODE_KEY, column_mapping_mode
from icecompat_writer.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    CM_PREFIX,
    Schema,
    id_in_range,
    is_id,
    parse_schema,
)
from icecompat_writer.storage import FileIO, parse_location
from icecompat_writer.upgrading.generated import volatile_generated_columns

__all__ = [
    "NEW_STATE_RULES",
    "FileRewrite",
    "UpgradePlan",
    "iceberg_metadata_files",
    "plan_upgrade",
]

# Violations of an in-place plan that only a new table state can repair: Delta keeps a table's column
# mapping mode (none -> name aside) and its columns' physical names, and a recorded type change stays
# in the schema for as long as files of the older type may exist.
NEW_STATE_RULES = frozenset(
    {
        "CM-MODE-CHANGE",
        "IWC1-ID-MODE",
        "IWC1-PHYSICAL-NAME",
        "CM-PHYSICAL-NAMES-STABLE",
        "CM-IDS-UNIQUE",
        "ICV3-TYPE-WIDENING",
        "ICV2-TYPE-WIDENING",
    }
)

_TYPE_CHANGES_KEY = "delta.typeChanges"
_DOCS = "docs/upgrade.md"


@dataclass(frozen=True)
class FileRewrite:
    """One live data file the upgrade rewrites: its path (as the log writes it), the file rules it
    violates under the planned state (empty in a new table state, where every file is rewritten), and
    the rows it holds for readers (its row count less the rows its deletion vector removes)."""

    path: str
    rules: tuple[str, ...]
    rows: int | None

    def render(self) -> str:
        why = ", ".join(self.rules) if self.rules else "new table state"
        rows = "" if self.rows is None else f", {self.rows} row(s)"
        return f"{self.path} ({why}{rows})"


@dataclass(frozen=True)
class UpgradePlan:
    """Everything one upgrade commits, planned from one snapshot (``version``) of ``table``.

    ``planned`` is the planner's result (protocol, metadata and the changes with their rules);
    ``new_table_state`` says whether the table gets a new state (every file rewritten), and
    ``reasons`` are the in-place violations that made it necessary. ``rewrite`` lists the files to
    rewrite, ``recommit`` the files re-added unchanged to receive row ids.
    """

    table: str
    profile: str
    version: int
    previous: TableState
    planned: Plan
    new_table_state: bool
    reasons: tuple[Violation, ...]
    rewrite: tuple[FileRewrite, ...]
    recommit: tuple[str, ...]
    files_total: int

    @property
    def changes(self) -> Sequence[Change]:
        return self.planned.changes

    @property
    def metadata_changed(self) -> bool:
        return self.new_table_state or self.planned.metadata != self.previous.metadata

    @property
    def protocol_changed(self) -> bool:
        return self.planned.protocol != self.previous.protocol

    @property
    def needed(self) -> bool:
        """Whether there is anything to commit at all (False: the table already complies)."""
        return bool(self.metadata_changed or self.protocol_changed or self.rewrite or self.recommit)

    @property
    def rows(self) -> int:
        """Rows held by the files to rewrite (as far as their footers tell)."""
        return sum(f.rows or 0 for f in self.rewrite)

    def properties_changed(self) -> dict[str, str]:
        """Table properties the upgrade sets or changes (what the commit's history entry shows)."""
        before = self.previous.metadata.configuration
        after = self.planned.metadata.configuration
        return {k: str(v) for k, v in sorted(after.items()) if before.get(k) != v}

    def rules_state(self) -> TableState | None:
        """The previous state the ``replace`` rules compare with (none for a new table state)."""
        return None if self.new_table_state else self.previous


def iceberg_metadata_files(table_root: str | Path, *, io: FileIO) -> list[str]:
    """Iceberg metadata already written for the table (``metadata/*.metadata.json``), names only."""
    folder = parse_location(os.fspath(table_root)) / "metadata"
    try:
        return sorted(e.name for e in io.list_files(folder) if e.name.endswith(".metadata.json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def plan_upgrade(
    table: str | Path,
    profile: str,
    *,
    version: int | None = None,
    column_mapping_first: bool = False,
    io: FileIO,
) -> UpgradePlan:
    """Plan the upgrade of the table at ``table`` (a local path) to ``profile``, at ``version``
    (default: the latest). Reads the log and every live file's footer through ``io``; writes nothing.

    ``column_mapping_first`` plans from the table as it is after a commit of its own turned column
    mapping ``name`` mode on (every physical name the column's name): what the upgrade of a table with
    change data feed does first, and what its dry run reports.

    Raises :class:`CompatViolation` for what no rewrite can fix, :class:`UpgradeRefused` when the
    rewrite would break the table's readers or the table cannot be read whole,
    :class:`~icecompat_writer.errors.TableReadError` when there is no table, and
    :class:`~icecompat_writer.planning.UnknownProfileError` for an unknown profile.
    """
    prof = get_profile(profile)
    snapshot = read_snapshot(table, version, io=io)
    root = str(snapshot.table_root)
    seen = snapshot_facts(snapshot, files="all")
    if seen.errors:
        raise UpgradeRefused([_unreadable(prof.name, f) for f in seen.errors], f"(upgrading {root})")
    previous = snapshot.state
    if column_mapping_first:
        previous = replace(previous, metadata=_name_mode(previous.metadata))

    reasons: tuple[Violation, ...] = ()
    refused: CompatViolation | None = None
    start, retired = retire_older_compat(prof.name, prof.rule_ids, _in_place_metadata(previous.metadata))
    try:
        planned = plan(prof, start, None, previous)
    except CompatViolation as err:
        refused = err
    new_state = refused is not None
    if refused is not None:
        reasons = tuple(v for v in refused.violations if v.rule in NEW_STATE_RULES)
        if not reasons:
            raise _unfixable(refused, root, prof.name)
        try:
            # A new table state keeps the protocol: Delta never drops a feature on an existing table.
            restated, _ = retire_older_compat(prof.name, prof.rule_ids, new_state_metadata(snapshot.metadata))
            planned = plan(prof, restated, snapshot.protocol, None)
        except CompatViolation as again:
            raise _unfixable(again, root, prof.name) from None
        published = iceberg_metadata_files(root, io=io)
        if published:
            refusal = _iceberg_readers(prof.name, root, published, reasons)
            raise UpgradeRefused([refusal], f"(upgrading {root})")

    if retired:
        planned = replace(planned, changes=(*retired, *planned.changes))
    rules_state = None if new_state else previous
    judged = verdict.decide(verdict.Plan(prof, planned.metadata, planned.protocol, rules_state))
    # plan() validates the same rules; judged all the same, as the writer judges its plan
    judged.raise_if_refused(f"(upgrading {root} to {prof.name})")

    adds = snapshot.add_files
    live_rows = [
        _live_rows(add, fact.footer.num_rows if fact.footer else None)
        for add, fact in zip(adds, seen.facts, strict=True)
    ]
    if new_state:
        rewrite = tuple(FileRewrite(a.path, (), rows) for a, rows in zip(adds, live_rows, strict=True))
        recommit: tuple[str, ...] = ()
    else:
        by_file = _short_files(prof.name, planned, previous, seen.facts)
        rewrite = tuple(
            FileRewrite(a.path, tuple(sorted(by_file[a.path])), rows)
            for a, rows in zip(adds, live_rows, strict=True)
            if a.path in by_file
        )
        recommit = _needs_row_ids(planned.metadata, adds, {f.path for f in rewrite})
    if rewrite or planned.metadata != previous.metadata or planned.protocol != previous.protocol:
        # before any file exists: delta-spark would re-generate (and fail) such a column on rewrite
        volatile = volatile_generated_columns(prof.name, planned.metadata, planned.protocol)
        if volatile:
            raise UpgradeRefused(volatile, f"(upgrading {root} to {prof.name}; nothing written)")
    if rewrite or recommit:
        refusals = verdict.decide(verdict.Rewrite(prof, planned.metadata, planned.protocol, previous))
        refusals.raise_if_refused(f"(upgrading {root} to {prof.name}; delta-spark would refuse the rewrite)")
    return UpgradePlan(
        table=root,
        profile=prof.name,
        version=snapshot.version,
        previous=previous,
        planned=planned,
        new_table_state=new_state,
        reasons=reasons,
        rewrite=rewrite,
        recommit=recommit,
        files_total=len(adds),
    )


# The rules that retire an older IcebergCompat version: the upgrade sets their properties to false in its
# commit (the protocol calls a version inactive when its property is not true; the feature may stay).
_RETIRING_RULES = ("ICV3-NO-OLDER-COMPAT", "ICV2-NO-V1")


def retire_older_compat(
    profile: str, rule_ids: tuple[str, ...], metadata: Metadata
) -> tuple[Metadata, tuple[Change, ...]]:
    """The metadata with every older IcebergCompat version the profile forbids turned off, and the
    changes that say so: an upgrade to IcebergCompatV3 retires V1/V2, one to writer-v1 retires V1, in
    the commit that enables the newer version (as delta-spark's REORG ... UPGRADE UNIFORM does)."""
    config = dict(metadata.configuration)
    changes: list[Change] = []
    for rule_id in _RETIRING_RULES:
        if rule_id not in rule_ids:
            continue
        rule = RULES_BY_ID[rule_id]
        for key in rule.param("keys"):
            if _true(config, key):
                config[key] = "false"
                changes.append(
                    Change(rule_id, "", f"set {key}=false (was {metadata.configuration[key]}): the older "
                           f"IcebergCompat version is retired by the upgrade to {profile}", rule.checks)
                )  # fmt: skip
    if not changes:
        return metadata, ()
    return metadata.with_configuration(config), tuple(changes)


def _unfixable(err: CompatViolation, root: str, profile: str) -> CompatViolation:
    return CompatViolation(err.violations, f"(upgrading {root} to {profile}; no rewrite can fix these)")


def _in_place_metadata(metadata: Metadata) -> Metadata:
    """The table's metadata as the in-place plan starts from it: an explicit ``none`` column mapping
    mode is the same as none set, and would stop the planner from choosing ``name`` under v3."""
    config = metadata.configuration
    if CM_MODE_KEY in config and column_mapping_mode(config) == "none":
        return metadata.with_configuration({k: v for k, v in config.items() if k != CM_MODE_KEY})
    return metadata


def _name_mode(metadata: Metadata) -> Metadata:
    """The metadata after Delta turned ``name`` mode on for a table without column mapping: every field
    keeps its name as its physical name (Delta also numbers them; the planner does that here)."""
    schema = _private_copy(metadata)
    for field in schema.fields:
        f = field.raw
        md = f.get("metadata")
        f["metadata"] = {**(md if isinstance(md, Mapping) else {}), CM_PHYSICAL_NAME: f["name"]}
    config = {**metadata.configuration, CM_MODE_KEY: "name"}
    return metadata.with_configuration(config).with_schema(schema)


def new_state_metadata(metadata: Metadata) -> Metadata:
    """The metadata of the table's new state, before the planner: ``id`` mode, every column without a
    physical name (the planner names it ``col-<id>``), its id kept where the table has valid ids (new
    ones continue after ``maxColumnId``), nested ids carried over to the new names, and no recorded
    type changes (every file is rewritten in the current types)."""
    schema = _private_copy(metadata)
    mapped = column_mapping_mode(metadata.configuration) in ("name", "id")
    keep_ids = mapped and _ids_valid(schema)
    _restate(schema, keep_ids)
    config = dict(metadata.configuration)
    config[CM_MODE_KEY] = "id"
    return metadata.with_configuration(config).with_schema(schema)


def _private_copy(metadata: Metadata) -> Schema:
    """The table's schema parsed from a private copy of its JSON, whose fields may be edited in place
    (the nodes' ``raw`` are that copy's objects) and then serialised once by ``with_schema``."""
    return parse_schema(copy.deepcopy(metadata.schema))


def _ids_valid(schema: Schema) -> bool:
    """Whether every field has an id and all ids (nested ones too) are distinct and in Iceberg's range."""
    ids: list[int] = []
    for f in schema.fields:
        md = f.raw.get("metadata")
        if not isinstance(md, Mapping):
            return False
        cid = md.get(CM_ID)
        if not is_id(cid):
            return False
        ids.append(cid)
        nested = md.get(CM_NESTED_IDS)
        if isinstance(nested, Mapping):
            ids.extend(v for v in nested.values() if is_id(v))
    return len(set(ids)) == len(ids) and all(id_in_range(i) for i in ids)


def _restate(schema: Schema, keep_ids: bool) -> None:
    for field in schema.fields:
        f = field.raw
        old_md = f.get("metadata")
        old = old_md if isinstance(old_md, Mapping) else {}
        md = {k: v for k, v in old.items() if k != _TYPE_CHANGES_KEY}
        old_name = md.pop(CM_PHYSICAL_NAME, None)
        nested = md.pop(CM_NESTED_IDS, None)
        if not keep_ids:
            md = {k: v for k, v in md.items() if not k.startswith(CM_PREFIX)}
        else:
            cid = md.get(CM_ID)
            if isinstance(nested, Mapping) and isinstance(old_name, str) and old_name:
                prefix = old_name + "."
                moved = {
                    f"col-{cid}.{k[len(prefix) :]}": v for k, v in nested.items() if str(k).startswith(prefix)
                }
                if moved:
                    md[CM_NESTED_IDS] = moved
        f["metadata"] = md


def _live_rows(add: AddFile, footer_rows: int | None) -> int | None:
    rows = footer_rows if footer_rows is not None else add.num_records
    if rows is None:
        return None
    dv = add.deletion_vector
    return rows - (dv.cardinality if dv is not None else 0)


def _short_files(profile: str, planned: Plan, previous: TableState, facts: list[Any]) -> dict[str, set[str]]:
    """Data file path -> the file rules it violates under the planned state."""
    # kept files are re-added, and Delta gives them row ids then: judged as not committed yet
    found = verdict.decide(
        verdict.KeptFiles(profile, planned.metadata, planned.protocol, previous, facts)
    ).violations
    by_file: dict[str, set[str]] = {}
    for v in found:
        path = violation_file(v)
        if path is None:  # every file rule names its file; anything else is a bug worth stopping for
            raise IcecompatError(f"a file rule's violation names no file: {v.render()}")
        by_file.setdefault(path, set()).add(v.rule)
    return by_file


def _true(config: Mapping[str, str], key: str) -> bool:
    return str(config.get(key, "")).strip().lower() == "true"


def _needs_row_ids(metadata: Metadata, adds: tuple[AddFile, ...], rewritten: set[str]) -> tuple[str, ...]:
    """Files to re-add unchanged so that they get row ids: with row tracking enabled, every live file of
    the version that enables it must have ``baseRowId`` and ``defaultRowCommitVersion``."""
    config = metadata.configuration
    if not _true(config, "delta.enableRowTracking") or _true(config, "delta.rowTrackingSuspended"):
        return ()
    return tuple(
        a.path
        for a in adds
        if a.path not in rewritten and (a.base_row_id is None or a.default_row_commit_version is None)
    )


def _unreadable(profile: str, finding: CheckFinding) -> Violation:
    where = f" ({finding.file}" + (f", line {finding.line}" if finding.line is not None else "") + ")"
    return layer_violation(
        profile,
        "UPGRADE-UNREADABLE",
        "",
        observed=finding.code,
        clause=f"{_DOCS}#refusals",
        problem=finding.message,
        where=where if finding.file else "",
    )


def _iceberg_readers(
    profile: str, root: str, published: list[str], reasons: tuple[Violation, ...]
) -> Violation:
    return layer_violation(
        profile,
        "UPGRADE-ICEBERG-READERS",
        "",
        observed=f"{len(published)} Iceberg metadata file(s)",
        clause=f"{_DOCS}#refusals",
        why=", ".join(sorted({v.rule for v in reasons})),
        count=len(published),
        root=root,
    )
