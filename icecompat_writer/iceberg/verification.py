"""The gate before any Iceberg metadata is written, and the record that lets the next run check less.

A conversion is allowed only for a Delta version that is compliant with the rules it is held to
(:func:`.checks.table_violations`: the catalog's rules for its profile plus the emitter's own), live data
files included: their footers are read (field ids, INT64 timestamps, materialised partition columns,
row count) exactly as ``icecompat check`` reads them.

**Full verification** (:func:`verify_full`) reads every live file's footer. It runs for a first
conversion, and whenever the record below cannot be trusted.

**Incremental verification** (:func:`verify_since`) relies on a record the previous run wrote into the
table properties of its ``v<N>.metadata.json``, next to what it converted:

- ``icecompat.verified-version``: the Delta version whose live files were all verified;
- ``icecompat.verified-rules``: the rule set they were verified under and the Iceberg format version
  (``<profile>/v<format>``);
- ``icecompat.verified-files``: how many live data files that version has.

A later run then reads only what the new Delta commits add: their actions, and the footers of the files
they add that are still live at the new version. The files verified before are not re-read: their
``add`` actions are unchanged (a re-added file is in a new commit, so it is checked again) and they were
verified under the same protocol, metadata and rules. The record is used only when it is consistent with
the metadata it travels in, else the full check runs: it must name the Delta version the metadata
holds (``icecompat.delta-version``), its file count must equal the current snapshot's
``total-data-files``, the rule set and format version must be those the table is held to now, and no
new commit may change the protocol or the metadata (a new schema or new properties can change what
old files must satisfy). A run that verified everything writes a fresh record.

The record is what this table's own Iceberg metadata says about itself: whoever can rewrite
``metadata/`` can also replace the data files or the metadata, so it is trusted as far as the
metadata itself is. What it cannot hide is a mismatch with the metadata (above), which falls back to
the full check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from icecompat_writer import storage
from icecompat_writer.deltalog import Snapshot, read_snapshot
from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.errors import Violation
from icecompat_writer.evidence.file_reads import footer_reader, reads_here
from icecompat_writer.evidence.footers import file_facts
from icecompat_writer.evidence.live_files import counted_from_footer, snapshot_facts
from icecompat_writer.storage import FileIO, Location

from . import _delta
from .checks import file_violations, row_tracking_enabled, rule_set_for, table_violations
from .locations import data_path_outside, outside_violation
from .metadata import PROP_DELTA_VERSION, SetProperties, TableMetadata
from .table import refusal_context, refuse

__all__ = [
    "PROP_VERIFIED_FILES",
    "PROP_VERIFIED_RULES",
    "PROP_VERIFIED_VERSION",
    "Verified",
    "record_problem",
    "record_update",
    "rules_key",
    "verify_commits",
    "verify_full",
    "verify_since",
]

PROP_VERIFIED_VERSION = "icecompat.verified-version"
PROP_VERIFIED_RULES = "icecompat.verified-rules"
PROP_VERIFIED_FILES = "icecompat.verified-files"


@dataclass(frozen=True)
class Verified:
    """What a gate established about Delta ``version``.

    ``protocol``/``metadata`` are those in force at ``version``; ``files`` its number of live data
    files; ``footers_read`` how many footers this gate opened; ``full`` whether every live file was
    checked (else only the new ones, ``reason`` empty); ``reason`` why a full check ran.
    ``new_paths`` is True when the new commits provably add only paths that were not live before
    (then an append needs no look at the existing manifests).
    """

    version: int
    protocol: Protocol
    metadata: Metadata
    rules: str
    files: int
    footers_read: int
    full: bool
    reason: str = ""
    new_paths: bool = False
    inside: frozenset[str] = frozenset()  # Delta paths this gate found inside the table root


def rules_key(metadata: Metadata, format_version: int) -> str:
    """The rule set a version is held to and the Iceberg format, as the record names them."""
    return f"{rule_set_for(metadata).profile.name}/v{format_version}"


def record_update(verified: Verified) -> SetProperties:
    """The table properties that record what was verified, applied through the run's transaction so
    the record is written with the metadata it describes."""
    return SetProperties(
        (
            (PROP_VERIFIED_VERSION, str(verified.version)),
            (PROP_VERIFIED_RULES, verified.rules),
            (PROP_VERIFIED_FILES, str(verified.files)),
        )
    )


def record_problem(meta: TableMetadata) -> str | None:
    """Why the record in ``meta`` cannot be used (None: it is consistent with the metadata)."""
    props = meta.properties
    raw = {k: props.get(k) for k in (PROP_VERIFIED_VERSION, PROP_VERIFIED_RULES, PROP_VERIFIED_FILES)}
    missing = [k for k, v in raw.items() if v is None]
    if missing:
        return f"no verification record ({', '.join(missing)} missing)"
    version, files = str(raw[PROP_VERIFIED_VERSION]), str(raw[PROP_VERIFIED_FILES])
    if not version.isdigit() or not files.isdigit():
        return "the verification record is malformed"
    if version != props.get(PROP_DELTA_VERSION):
        return (
            f"the verification record names Delta version {version}, the metadata holds "
            f"{props.get(PROP_DELTA_VERSION)}"
        )
    snap = meta.current_snapshot()
    total = None if snap is None else snap.summary.get("total-data-files")
    if total != files:
        return f"the verification record counts {files} live files, the current snapshot {total}"
    return None


FOOTER_BATCH = 2_000
"""Live files verified at a time: their facts (footers included) are judged and dropped per batch."""


def _check(
    root: Location,
    version: int,
    protocol: Protocol,
    metadata: Metadata,
    format_version: int,
    batches: Iterable[Sequence[AddFile]],
    inside: set[str],
    io: FileIO,
    lost: frozenset[str] = frozenset(),
) -> int:
    """Facts of the files in ``batches`` (footers read unless the path leaves the root), judged batch by
    batch by the file rules (:func:`.checks.file_violations`), then the table's own rules; refuses with
    every problem. Paths found inside the root go into ``inside``. A file in ``lost``
    (``Snapshot.stats_lost``) takes its row count from its footer, as the checker does. Returns the
    number of footers read.

    Only one batch's facts are held at a time, so the memory this takes follows the batch size, not
    the table's file count; the problems found are those of one judgement of every file at once."""
    real_root = io.resolved(root)
    outside: list[Violation] = []
    file_problems: list[Violation] = []
    read = 0
    real_dirs: dict[str, str] = {}
    for adds in batches:
        reasons = [data_path_outside(root, real_root, add.path, real_dirs, io=io) for add in adds]
        for add, reason in zip(adds, reasons, strict=True):
            if reason is not None:
                outside.append(outside_violation(add.path, reason))
            else:
                inside.add(add.path)
        # Footers are read in order, in a pool sized by storage.footer_readers (none for a small local
        # commit's few footers, the cores for many local ones, 16 on an object store).
        facts = [
            counted_from_footer(fact, lost)
            for fact in storage.map_bounded(
                lambda pair: file_facts(root, pair[0], read_footer=pair[1] is None, io=io),
                list(zip(adds, reasons, strict=True)),
                workers=storage.footer_readers(io, len(adds)),
            )
        ]
        read += sum(1 for r in reasons if r is None)
        file_problems.extend(file_violations(protocol, metadata, facts))
    converted, problems = table_violations(protocol, metadata, format_version)
    if file_problems and converted is not None:
        problems = []  # with file problems the schema is not converted (table_violations)
    refuse([*outside, *problems, *file_problems], refusal_context(version, metadata))
    return read


def verify_full(
    root: Location,
    version: int,
    format_version: int,
    reason: str = "first conversion",
    snap: Snapshot | None = None,
    *,
    io: FileIO,
) -> Verified:
    """Every live data file of ``version`` checked (footers read through ``io``), with the table's rules.

    ``snap``: the snapshot of ``version`` when the caller has read it already."""
    if snap is None or snap.version != version:
        snap = read_snapshot(root, version, io=io)
    inside: set[str] = set()
    read = 0
    remote = io.remote
    if remote or not reads_here(footer_reader(), len(snap.files), remote):
        # one listing of the table, then one ranged read per footer in a bounded pool (the checker's
        # path); also where a session's executors read the footers (evidence.file_reads.footers_read_by)
        facts = list(snapshot_facts(snap, files="all", every_file=True, footer_counts=True).facts)
        read = len(facts)
        real_root = io.resolved(snap.table_root)
        outside = []
        for a in snap.add_files:
            r = data_path_outside(snap.table_root, real_root, a.path, io=io)
            if r is None:
                inside.add(a.path)
            else:
                outside.append(outside_violation(a.path, r))
        _, problems = table_violations(snap.protocol, snap.metadata, format_version, facts)
        refuse([*outside, *problems], refusal_context(version, snap.metadata))
    else:
        read = _check(
            snap.table_root,
            version,
            snap.protocol,
            snap.metadata,
            format_version,
            snap.files.batches(FOOTER_BATCH),
            inside,
            io,
            snap.stats_lost,
        )
    return Verified(
        version,
        snap.protocol,
        snap.metadata,
        rules_key(snap.metadata, format_version),
        len(snap.files),
        read,
        True,
        reason,
        inside=frozenset(inside),
    )


def verify_since(
    root: Location,
    meta: TableMetadata,
    commits: Sequence[_delta.Commit],
    version: int,
    format_version: int,
    snap: Snapshot | None = None,
    *,
    io: FileIO,
) -> Verified:
    """Verify ``version`` reading only what ``commits`` (every commit after the recorded one) add,
    through ``io``.

    Falls back to :func:`verify_full` (and says why in ``reason``) when the record is missing or
    inconsistent, the rules changed, or a commit changes the protocol or metadata.
    """
    problem = record_problem(meta)
    if problem is None and any(c.changes_table for c in commits):
        problem = "a new commit changes the protocol or the table metadata"
    if problem is not None:
        return verify_full(root, version, format_version, problem, snap, io=io)
    if snap is None or snap.version != version:
        snap = read_snapshot(root, version, io=io)
    key = rules_key(snap.metadata, format_version)
    if key != meta.properties.get(PROP_VERIFIED_RULES):
        return verify_full(
            root,
            version,
            format_version,
            f"verified under {meta.properties.get(PROP_VERIFIED_RULES)}, held to {key} now",
            snap,
            io=io,
        )
    added, n_adds, removes = _added_since(commits)
    inside: set[str] = set()
    read = _check(
        snap.table_root,
        version,
        snap.protocol,
        snap.metadata,
        format_version,
        [[AddFile.from_json(a) for a in added.values()]],
        inside,
        io,
    )
    before = int(meta.properties[PROP_VERIFIED_FILES])
    # Without removes and with distinct paths, the live set grew by exactly the added paths unless one
    # of them was live already: then the count at ``version`` would be smaller.
    new_paths = removes == 0 and n_adds == len(added) and before + len(added) == len(snap.files)
    return Verified(
        version,
        snap.protocol,
        snap.metadata,
        key,
        len(snap.files),
        read,
        False,
        "",
        new_paths,
        frozenset(inside),
    )


def _added_since(commits: Sequence[_delta.Commit]) -> tuple[dict[str, Mapping[str, object]], int, int]:
    """The files ``commits`` add that are still live after the last of them (by path, in commit
    order), how many ``add`` actions they hold and how many ``remove`` actions."""
    added: dict[str, Mapping[str, object]] = {}
    n_adds = removes = 0
    for c in commits:
        for kind, obj in c.actions:
            if kind == "add":
                n_adds += 1
                added[str(obj["path"])] = obj
            elif kind == "remove":
                removes += 1
                added.pop(str(obj["path"]), None)
    return added, n_adds, removes


def _record_count(add: Mapping[str, object]) -> int | None:
    stats = add.get("stats")
    if not isinstance(stats, str):
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fresh_row_ids(meta: TableMetadata, metadata: Metadata, adds: Iterable[Mapping[str, object]]) -> bool:
    """Whether every one of ``adds`` provably names a file that is not live in ``meta``'s current
    snapshot, from row ids alone (no manifest read).

    Delta's row tracking (PROTOCOL.md, "Writer Requirements for Row Tracking"): a recommitted ``add``
    of a path carries the ``baseRowId`` of the last ``add`` of that path, and a new file gets a
    ``baseRowId`` above the high-water mark. Every live file of this v3 table entered it with its
    Delta ``baseRowId`` as its ``first_row_id``, and the table's ``next-row-id`` is at least each
    file's ``first_row_id`` plus its record count (:mod:`.producers`). So a live file's ``baseRowId``
    is below ``next-row-id`` (equal only for a file of no rows), and an ``add`` whose ``baseRowId`` is
    above it, or equal with rows in it, is not a recommit of a live file. Anything else (row tracking
    off or suspended, v2, a missing id or count) proves nothing: the caller then reads the index.
    """
    n = meta.next_row_id
    if meta.format_version < 3 or n is None or not row_tracking_enabled(metadata):
        return False
    for add in adds:
        base = add.get("baseRowId")
        if isinstance(base, bool) or not isinstance(base, int):
            return False
        if base > n:
            continue
        records = _record_count(add)
        if base == n and records is not None and records > 0:
            continue
        return False
    return True


def verify_commits(
    root: Location,
    meta: TableMetadata,
    commits: Sequence[_delta.Commit],
    version: int,
    format_version: int,
    protocol: Protocol,
    metadata: Metadata,
    live_files: int | None = None,
    *,
    io: FileIO,
) -> Verified:
    """:func:`verify_since` without the Delta snapshot of ``version``: what a sync after a small commit
    reads, so that its cost follows the commit, not the table.

    The caller established what :func:`verify_since` learns from the snapshot: the record in ``meta``
    is consistent (:func:`record_problem`), ``protocol``/``metadata`` are those in force at the
    recorded version, none of ``commits`` changes them (so they are in force at ``version`` too, and
    the old files were verified under them), and the rule set is the recorded one. Then only the
    files ``commits`` add that are still live at ``version`` need their footers read, exactly as in
    :func:`verify_since`. What the snapshot gave besides: the live-file count, which the caller takes
    from the converted Iceberg snapshot instead (``files`` is -1 here), and ``new_paths``, here
    proved from row ids (:func:`fresh_row_ids`), or from the count as :func:`verify_since` proves it
    when ``live_files`` gives the count at ``version`` (the checksum file Delta wrote with it).
    """
    added, n_adds, removes = _added_since(commits)
    inside: set[str] = set()
    read = _check(
        root,
        version,
        protocol,
        metadata,
        format_version,
        [[AddFile.from_json(a) for a in added.values()]],
        inside,
        io,
    )
    before = int(meta.properties[PROP_VERIFIED_FILES])
    new_paths = (
        removes == 0
        and n_adds == len(added)
        and (
            fresh_row_ids(meta, metadata, added.values())
            or (live_files is not None and before + len(added) == live_files)
        )
    )
    return Verified(
        version,
        protocol,
        metadata,
        rules_key(metadata, format_version),
        -1,
        read,
        False,
        "",
        new_paths,
        frozenset(inside),
    )
