"""``upgrade_table``: bring an existing Delta table to a profile in one Delta transaction.

One upgrade flows one way, like a compat write: open a transaction and read its snapshot -> plan the
upgrade from that very version (:func:`~icecompat_writer.upgrading.plan.plan_upgrade`: compliant
metadata and protocol, the files that fall short, or a refusal) -> rewrite exactly those files in the
transaction (their rows read through Delta, written under the planned metadata, the originals removed)
-> verify every new file's footer and row count -> commit metadata, protocol, adds and removes
together, or delete exactly the files this attempt wrote. A table that already complies commits
nothing, so running an upgrade twice changes the table once. A lost race is re-planned from the newer
snapshot (bounded); the loop is the one compat_write runs (:mod:`icecompat_writer.writing.transaction`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from icecompat_writer.deltalog import read_snapshot
from icecompat_writer.errors import CompatViolation, IcecompatError, TableReadError
from icecompat_writer.evidence.file_reads import footers_read_by
from icecompat_writer.jvm.footers import ExecutorFooterReader
from icecompat_writer.schema import JsonDict
from icecompat_writer.storage import io_for
from icecompat_writer.upgrading.plan import FileRewrite, UpgradePlan, plan_upgrade
from icecompat_writer.writing.target import Target

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icecompat_writer.errors import Violation
    from icecompat_writer.planning import Change

__all__ = ["UpgradeResult", "upgrade_table"]

log = logging.getLogger(__name__)

JSON_FORMAT = "icecompat-upgrade/1"
"""Identifies the shape of :meth:`UpgradeResult.to_json`."""


@dataclass(frozen=True)
class UpgradeResult:
    """What an upgrade did (or, with ``dry_run``, would do).

    ``read_version`` is the version the upgrade was planned from; ``version`` the version it committed
    (None: nothing committed, because it was a dry run or there was nothing to do, see ``needed``).
    ``changes`` are the planned protocol and metadata changes with the rule behind each;
    ``new_table_state`` says every file is rewritten (``reasons``: the in-place violations that made it
    necessary); ``rewritten`` the files rewritten and why; ``recommitted`` the files re-added unchanged
    to get row ids; ``added`` the new data files and ``rows`` the rows they hold.
    """

    table: str
    profile: str
    read_version: int
    version: int | None
    dry_run: bool
    needed: bool
    new_table_state: bool = False
    reasons: tuple[Violation, ...] = ()
    changes: Sequence[Change] = ()
    properties: tuple[tuple[str, str], ...] = ()
    rewritten: tuple[FileRewrite, ...] = ()
    recommitted: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    rows: int = 0
    files_total: int = 0
    attempts: int = 1
    column_mapping_first: bool = False
    column_mapping_version: int | None = None

    @property
    def committed(self) -> bool:
        return self.version is not None

    def headline(self) -> str:
        """One line: what the upgrade did (or would do)."""
        if not self.needed:
            return (
                f"{self.table} already complies with {self.profile} at version {self.read_version}: "
                "nothing to upgrade, nothing committed"
            )
        dry = self.dry_run
        if self.rewritten:
            rows = sum(f.rows or 0 for f in self.rewritten)
            files = f"{len(self.rewritten)} of {self.files_total} data file(s) ({rows} row(s))"
            if dry:
                what = f"would rewrite {files}"
            else:
                what = f"rewrote {files} into {len(self.added)} new file(s)"
            if self.new_table_state:
                what = ("would give" if dry else "gave") + " the table a new state: " + what
        else:
            what = (
                "would change" if dry else "changed"
            ) + " the metadata and protocol, no data file rewritten"
        if self.recommitted:
            verb = "would re-add" if dry else "re-added"
            what += f"; {verb} {len(self.recommitted)} file(s) unchanged for row ids"
        if self.column_mapping_first:
            what += "; change data feed is on, so column mapping " + (
                "would be turned on first, in a commit of its own"
                if dry
                else f"was turned on first, in version {self.column_mapping_version}"
            )
        if self.dry_run:
            return (
                f"dry run: upgrading {self.table} to {self.profile} from version {self.read_version} "
                f"{what}, in one commit; nothing was changed"
            )
        return (
            f"upgraded {self.table} to {self.profile}: committed version {self.version} "
            f"(read version {self.read_version}); {what}"
        )

    def render_text(self, limit: int = 50) -> str:
        """The headline, then why a new state, the planned changes, and the files (``limit`` each)."""
        lines = [self.headline()]
        if not self.needed:
            return lines[0]
        if self.reasons:
            lines.append("  why a new table state (Delta changes none of these on an existing table):")
            lines.extend(f"    - {v.render()}" for v in self.reasons[:limit])
        lines.append(f"  planned metadata and protocol changes ({len(self.changes)}):")
        lines.extend(f"    - {c.render()}" for c in self.changes[:limit])
        if len(self.changes) > limit:
            lines.append(f"    ... and {len(self.changes) - limit} more")
        verb = "to rewrite" if self.dry_run else "rewritten"
        lines.append(f"  data files {verb} ({len(self.rewritten)} of {self.files_total}):")
        lines.extend(f"    - {f.render()}" for f in self.rewritten[:limit])
        if len(self.rewritten) > limit:
            lines.append(f"    ... and {len(self.rewritten) - limit} more")
        if self.recommitted:
            verb = "to re-add" if self.dry_run else "re-added"
            lines.append(
                f"  data files {verb} unchanged so that Delta gives them row ids ({len(self.recommitted)}):"
            )
            lines.extend(f"    - {p}" for p in self.recommitted[:limit])
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render_text()

    def to_json(self) -> JsonDict:
        return {
            "format": JSON_FORMAT,
            "table": self.table,
            "profile": self.profile,
            "dry_run": self.dry_run,
            "needed": self.needed,
            "read_version": self.read_version,
            "version": self.version,
            "new_table_state": self.new_table_state,
            "reasons": [_violation_json(v) for v in self.reasons],
            "changes": [{"rule": c.rule, "path": c.path, "what": c.what} for c in self.changes],
            "properties": dict(self.properties),
            "files": {
                "total": self.files_total,
                "rewritten": [
                    {"path": f.path, "rules": list(f.rules), "rows": f.rows} for f in self.rewritten
                ],
                "recommitted": list(self.recommitted),
                "added": list(self.added),
            },
            "rows": self.rows,
            "attempts": self.attempts,
            "column_mapping_first": self.column_mapping_first,
            "column_mapping_version": self.column_mapping_version,
        }

    @classmethod
    def from_plan(
        cls,
        p: UpgradePlan,
        *,
        dry_run: bool,
        version: int | None = None,
        added: tuple[str, ...] = (),
        rows: int | None = None,
        attempts: int = 1,
    ) -> UpgradeResult:
        return cls(
            table=p.table,
            profile=p.profile,
            read_version=p.version,
            version=version,
            dry_run=dry_run,
            needed=p.needed,
            new_table_state=p.new_table_state,
            reasons=p.reasons,
            changes=p.changes,
            properties=tuple(p.properties_changed().items()),
            rewritten=p.rewrite,
            recommitted=p.recommit,
            added=added,
            rows=p.rows if rows is None else rows,
            files_total=p.files_total,
            attempts=attempts,
        )


def _violation_json(v: Violation) -> JsonDict:
    return {"profile": v.profile, "rule": v.rule, "path": v.path, "message": v.message, "fix": v.fix}


def _location(path: str | Path) -> str:
    """The table's location as the JVM and the log reader both take it: a local path made absolute
    (``file:`` URIs too), an object-store URI (``s3a://bucket/t``) as the user wrote it."""
    from icecompat_writer import storage

    return str(storage.parse_location(os.fspath(path)))  # a local path's text, or the object's URI


def upgrade_table(
    spark: SparkSession | None, path: str | Path, profile: str = "v3", *, dry_run: bool = False
) -> UpgradeResult:
    """Bring the Delta table at ``path`` to ``profile`` in one commit, or refuse; see ``docs/upgrade.md``.

    Rewrites only the data files that fall short of the profile (INT96 timestamps, partition values
    missing from the file, missing or wrong Parquet field ids, missing statistics), or every file when
    the table needs a new state (column mapping ``id`` mode and ``col-<id>`` names for the writer
    profiles). A table that complies already is left alone (nothing committed). ``dry_run`` plans and
    reports without changing anything (and without using ``spark``).

    Raises :class:`~icecompat_writer.errors.CompatViolation` when no rewrite can make the table
    comply, :class:`~icecompat_writer.errors.UpgradeRefused` when the rewrite would break the table's
    readers or the table cannot be read whole, :class:`TableReadError` when there is no table.
    """
    from icecompat_writer.evidence.footers import file_facts
    from icecompat_writer.jvm import bridge
    from icecompat_writer.planning import get_profile
    from icecompat_writer.rules import verdict
    from icecompat_writer.writing import transaction

    location = _location(path)
    prof = get_profile(profile)
    io = io_for(location)  # the running session's Hadoop settings, else the environment
    if dry_run:
        try:
            return UpgradeResult.from_plan(plan_upgrade(location, prof.name, io=io), dry_run=True)
        except CompatViolation as err:
            if not _column_mapping_first(err):
                raise
        ahead = plan_upgrade(location, prof.name, column_mapping_first=True, io=io)
        return replace(UpgradeResult.from_plan(ahead, dry_run=True), column_mapping_first=True)
    if spark is None:
        raise IcecompatError("upgrade_table needs a SparkSession (only a dry run does without one)")
    if prof.name.startswith("writer-"):
        bridge.activate_writer_features(spark)
    # every live file's footer is read to plan: on the executors when the table is big (the
    # session's spark.icecompat.footers.* settings)
    footers = ExecutorFooterReader.from_session(spark)

    def attempt_upgrade(t: transaction.Attempt) -> UpgradeResult:
        pending = t.pending
        read_version = t.read_version
        if read_version < 0:
            raise TableReadError(f"there is no Delta table at {location}")
        with footers_read_by(footers):
            p = plan_upgrade(location, prof.name, version=read_version, io=io)
        if not p.needed:
            return UpgradeResult.from_plan(p, dry_run=False, attempts=t.number)

        request = {
            "protocol": p.planned.protocol.to_json(),
            "metaData": p.planned.metadata.to_json(),
            "metadataChanged": p.metadata_changed,
            "newTableState": p.new_table_state,
            "rewrite": [f.path for f in p.rewrite],
            "recommit": list(p.recommit),
        }
        added, removed, recommitted = t.write(lambda: pending.rewrite(request))
        adds = t.track(added)
        rows = sum(a.num_records or 0 for a in adds)
        # read inside the attempt: an error here aborts it like a refusal (no orphan files)
        facts = [file_facts(location, a, io=io) for a in adds]
        problems = verdict.decide(
            verdict.PreCommit(prof, p.planned.metadata, p.planned.protocol, p.rules_state(), facts)
        ).violations
        expected_rows = None if any(f.rows is None for f in p.rewrite) else p.rows
        if problems or (expected_rows is not None and rows != expected_rows):
            deleted = t.abort()
            log.warning("upgrade of %s refused after writing: removed %d new file(s)", location, deleted)
            if problems:
                raise CompatViolation(
                    problems, f"(verifying the rewritten files of {location}; nothing committed)"
                )
            raise IcecompatError(
                f"the rewrite of {len(p.rewrite)} file(s) of {location} wrote {rows} row(s) where the "
                f"originals hold {expected_rows}; nothing committed"
            )
        if removed != len(p.rewrite) or recommitted != len(p.recommit):  # pragma: no cover - shim bug
            raise IcecompatError(
                f"the shim removed {removed} and re-added {recommitted} file(s) where the plan has "
                f"{len(p.rewrite)} and {len(p.recommit)}; nothing committed"
            )
        version = t.commit(lambda: pending.commit_upgrade(p.properties_changed()))
        return UpgradeResult.from_plan(
            p,
            dry_run=False,
            version=version,
            added=tuple(a.path for a in adds),
            rows=rows,
            attempts=t.number,
        )

    try:
        return transaction.run(spark, location, attempt_upgrade, io=io)
    except CompatViolation as err:
        if not _column_mapping_first(err):
            raise
    # Change data feed is on and the table has no column mapping: delta-spark refuses to turn column
    # mapping on in a commit that also writes files, but accepts it in a commit of its own, after which
    # the upgrade keeps every physical name (DELTA-SPARK-CDF-COLUMN-MAPPING).
    target = Target(location=location)
    spark.sql(
        f"ALTER TABLE {target.sql_name} SET TBLPROPERTIES ('delta.columnMapping.mode'='name')"
    ).collect()
    mapped_at = read_snapshot(location, io=io).version
    log.info("turned column mapping on in %s at version %d before the upgrade", location, mapped_at)
    result = transaction.run(spark, location, attempt_upgrade, io=io)
    return replace(result, column_mapping_first=True, column_mapping_version=mapped_at)


def _column_mapping_first(err: CompatViolation) -> bool:
    """Whether the only refusal is change data feed with column mapping being turned on (not a column
    dropped or renamed): the one case a commit of its own resolves."""
    return bool(err.violations) and all(
        v.rule == "DELTA-SPARK-CDF-COLUMN-MAPPING" and v.path == "" and "none ->" in (v.observed or "")
        for v in err.violations
    )
