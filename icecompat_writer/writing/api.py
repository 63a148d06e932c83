"""``compat_write``: the Delta write that only ever commits Iceberg-compatible tables.

One write flows one way: open a transaction and read its snapshot -> compose what Delta's own write
semantics make of it -> plan the compliant protocol and metadata (or refuse) -> validate -> write the
data files (uncommitted) -> verify every new file's footer against the file-level rules -> commit, or
delete exactly the files this write created. Everything that can be refused from the plan alone is
refused before a single data file exists, so the table stays byte-for-byte as it was.

A commit that loses a race against another writer is re-planned from the newer snapshot (bounded);
a commit whose outcome is unknown is looked up in the log (by the data files it added) before
anything is retried, so a retry never duplicates rows.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
from icecompat_writer.deltalog.files import AddFile
from icecompat_writer.errors import (
    CompatViolation,
    IcecompatError,
    TableExistsError,
    TableNotFoundError,
)
from icecompat_writer.evidence.file_reads import footers_read_by
from icecompat_writer.evidence.footers import file_facts
from icecompat_writer.iceberg.sync import CATALOG_CONF, IcebergSync, sync_after_commit, sync_requested
from icecompat_writer.jvm.footers import ExecutorFooterReader
from icecompat_writer.planning import Change, Plan, plan
from icecompat_writer.rules import verdict
from icecompat_writer.schema import JsonDict, JsonObject, parse_schema
from icecompat_writer.storage import FileIO, io_for
from icecompat_writer.writing import transaction
from icecompat_writer.writing.compose import (
    OVERWRITE_MODES,
    REPLACE_MODES,
    WriteIntent,
    compose_metadata,
    write_violation,
)
from icecompat_writer.writing.target import Target, parse_target

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


__all__ = ["WriteResult", "compat_write"]

log = logging.getLogger(__name__)

MODES = frozenset(
    {
        "append",
        "overwrite",
        "errorifexists",
        "error",
        "ignore",
        # the v2 writer's flavours: they insist on the table existing (or not) and may replace it
        "append_existing",
        "overwrite_existing",
        "replace",
        "create_or_replace",
    }
)
MAX_ATTEMPTS = transaction.MAX_ATTEMPTS
_CATALOG_NAME = re.compile(r"[A-Za-z0-9_]+")  # what Spark's session catalog accepts for a new table


@dataclass(frozen=True)
class WriteResult:
    """What a compat write did.

    ``version`` is the committed table version (None when nothing was committed, see ``skipped``);
    ``files`` are the data files added (paths as in the log); ``rows`` the rows they hold (from their
    ``numRecords``); ``changes`` what the plan changed in the protocol and metadata, and why.
    ``iceberg`` is the Iceberg sync that followed the commit (tables whose
    ``delta.universalFormat.enabledFormats`` lists ``iceberg``; None otherwise).
    """

    target: str
    location: str
    profile: str
    mode: str
    version: int | None
    files: tuple[str, ...] = ()
    rows: int = 0
    changes: tuple[Change, ...] = ()
    skipped: str | None = None
    attempts: int = 1
    removed_files: int = 0
    iceberg: IcebergSync | None = None

    def __str__(self) -> str:
        if self.version is None:
            return f"nothing written to {self.target}: {self.skipped}"
        return (
            f"committed version {self.version} of {self.target} ({self.profile}): {len(self.files)} file(s), "
            f"{self.rows} row(s), {len(self.changes)} planned change(s)"
        )


@dataclass
class _Request:
    """The user's write, normalised once."""

    mode: str
    profile: str
    partition_by: tuple[str, ...] | None
    properties: dict[str, str]
    options: dict[str, str]
    by_position: bool
    app_id: str | None = None
    app_version: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def merge_schema(self) -> bool:
        return self.options.get("mergeSchema", "false").lower() == "true"

    @property
    def overwrite_schema(self) -> bool:
        return self.options.get("overwriteSchema", "false").lower() == "true"


def _normalise(
    mode: str,
    profile: str,
    partition_by: str | Sequence[str] | None,
    properties: JsonObject | None,
    options: JsonObject | None,
    by_position: bool,
) -> _Request:
    m = (mode or "errorifexists").lower()
    if m not in MODES:
        raise IcecompatError(
            f"unknown mode {mode!r}; use one of append, overwrite, errorifexists (error), ignore"
        )
    if m == "error":
        m = "errorifexists"
    parts: tuple[str, ...] | None
    if partition_by is None:
        parts = None
    elif isinstance(partition_by, str):
        parts = (partition_by,)
    else:
        parts = tuple(partition_by)
    opts = {k: _opt(v) for k, v in (options or {}).items()}
    props = {k: _opt(v) for k, v in (properties or {}).items()}
    # Delta accepts table properties as writer options too ("delta.*"): treat them as properties.
    for k in [k for k in opts if k.startswith("delta.")]:
        props.setdefault(k, opts.pop(k))
    app_id = opts.pop("txnAppId", None)
    app_version_s = opts.pop("txnVersion", None)
    if (app_id is None) != (app_version_s is None):
        raise IcecompatError("txnAppId and txnVersion go together: give both or neither")
    app_version = None
    if app_version_s is not None:
        try:
            app_version = int(app_version_s)
        except ValueError:
            raise IcecompatError(f"txnVersion must be an integer, got {app_version_s!r}") from None
    return _Request(m, profile, parts, props, opts, by_position, app_id, app_version)


def _opt(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _previous_state(snapshot: Mapping[str, Any]) -> TableState | None:
    if int(snapshot.get("version", -1)) < 0:
        return None
    return TableState(
        protocol=Protocol.from_json(snapshot["protocol"]),
        metadata=Metadata.from_json(snapshot["metaData"]),
        version=int(snapshot["version"]),
    )


def _align_by_position(df: DataFrame, previous: TableState) -> DataFrame:
    """``insertInto`` semantics: columns match the table's by position, not by name."""
    names = [f.name for f in previous.metadata.schema_model.top]
    if len(df.columns) != len(names):
        raise CompatViolation(
            [
                write_violation(
                    "DELTA-WRITE-COLUMN-COUNT",
                    "",
                    observed=str(len(df.columns)),
                    expected=str(len(names)),
                )
            ]
        )
    return df.toDF(*names)


def _resolve_location(spark: SparkSession, target: Target) -> tuple[str, bool]:
    """(location, catalog table exists) for a target. Path targets report False for the second value."""
    from icecompat_writer.jvm import bridge  # pyspark and py4j, loaded only when a write runs

    if target.table is None:
        assert target.location is not None
        return target.location, False
    if spark.catalog.tableExists(target.sql_name):
        detail = spark.sql(f"DESCRIBE DETAIL {target.sql_name}").collect()[0].asDict()
        if str(detail.get("format", "")).lower() != "delta":
            raise IcecompatError(
                f"table {target.display} is not a Delta table (format {detail.get('format')})"
            )
        return str(detail["location"]), True
    bad = [p for p in target.table if not _CATALOG_NAME.fullmatch(p)]
    if bad:
        raise IcecompatError(
            f"cannot create catalog table {target.display}: the session catalog only accepts names of "
            f"letters, digits and _ (not {', '.join(repr(b) for b in bad)}); choose such a name or write "
            "to a path"
        )
    return bridge.default_table_location(spark, target.table), False


def _register_table(spark: SparkSession, target: Target, location: str, version: int) -> None:
    """Register a table just written at ``location`` under its catalog name (identifiers quoted)."""
    escaped = location.replace("\\", "\\\\").replace("'", "\\'")
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {target.sql_name} USING delta LOCATION '{escaped}'")
    except Exception as err:  # pyspark raises its own wrappers of Java errors here
        raise IcecompatError(
            f"version {version} of the table was committed at {location}, but registering it as "
            f"{target.display} in the catalog failed ({str(err).splitlines()[0]}); register it with "
            f"CREATE TABLE <name> USING delta LOCATION '{location}'"
        ) from None


def compat_write(
    df: DataFrame,
    target: str | Path,
    *,
    mode: str = "errorifexists",
    partition_by: str | Sequence[str] | None = None,
    profile: str = "v3",
    properties: JsonObject | None = None,
    options: JsonObject | None = None,
    by_position: bool = False,
) -> WriteResult:
    """Write ``df`` to a Delta table so that the result is compliant with ``profile``, or refuse.

    ``target`` is a path/URI or a catalog table name. ``mode`` is append, overwrite, errorifexists
    (error) or ignore. ``properties`` are table properties; ``options`` writer options (mergeSchema,
    overwriteSchema, replaceWhere, partitionOverwriteMode, txnAppId/txnVersion, userMetadata).
    Raises :class:`CompatViolation` (every problem at once) when the write cannot be made compliant;
    the table is then unchanged.
    """
    from icecompat_writer.jvm import bridge  # pyspark and py4j, loaded only when a write runs

    req = _normalise(mode, profile, partition_by, properties, options, by_position)
    spark = df.sparkSession
    if req.profile.startswith("writer-"):
        bridge.activate_writer_features(spark)
    tgt = parse_target(target)
    location, registered = _resolve_location(spark, tgt)
    io = io_for(location)  # the running session's Hadoop settings, else the environment
    write = _Write(spark, df, req, tgt, location, registered, io)
    created = transaction.missing_ancestor(location, io=io)
    result: WriteResult = transaction.run(spark, location, write.attempt, created=created, io=io)
    if result.version is not None:
        identifier = _catalog_identifier(spark, tgt)
        result = _sync_iceberg(spark, result, write.committed_configuration, identifier, io)
    return result


@dataclass
class _Write:
    """One compat write, attempted until it commits: each attempt admits the write against the
    snapshot it read (:meth:`_skip`), plans and judges it before a file exists (:meth:`_planned`),
    writes the data files, judges them (:meth:`_verified`) and commits."""

    spark: SparkSession
    df: DataFrame
    req: _Request
    target: Target
    location: str
    registered: bool
    io: FileIO
    committed_configuration: dict[str, str] = field(default_factory=dict)

    def attempt(self, t: transaction.Attempt) -> WriteResult:
        pending = t.pending
        previous = _previous_state(pending.snapshot_json())
        reason = self._skip(t, previous)
        if reason is not None:
            return self._result(t, skipped=reason)
        data = self.df
        if self.req.by_position and previous is not None:
            data = _align_by_position(self.df, previous)
        intent, planned = self._planned(data, previous)
        request = self._request(intent, planned, previous)
        added, removed_count = t.write(lambda: pending.write(data, request))
        adds = self._verified(t, planned, previous, t.track(added))
        options = self.req.options
        operation = {"userMetadata": options["userMetadata"]} if "userMetadata" in options else {}
        version = t.commit(lambda: pending.commit(operation))
        self.committed_configuration.update(planned.metadata.configuration)
        if self.target.table is not None and not self.registered:
            _register_table(self.spark, self.target, self.location, version)
        return self._result(
            t,
            version=version,
            files=tuple(a.path for a in adds),
            rows=sum(a.num_records or 0 for a in adds),
            changes=tuple(getattr(planned, "changes", ())),
            removed_files=removed_count,
        )

    def _result(self, t: transaction.Attempt, version: int | None = None, **kw: Any) -> WriteResult:  # noqa: ANN401  # WriteResult's fields, passed through
        req = self.req
        return WriteResult(
            self.target.display, self.location, req.profile, req.mode, version, attempts=t.number, **kw
        )

    def _skip(self, t: transaction.Attempt, previous: TableState | None) -> str | None:
        """Why this write does nothing (the mode or the idempotent txn says so), or None; raises
        when the mode refuses the table as it is."""
        req, tgt = self.req, self.target
        exists = previous is not None or self.registered
        if exists and req.mode == "errorifexists":
            raise TableExistsError(
                f"{tgt.display} already exists (mode errorifexists); use mode='append' or 'overwrite'"
            )
        if exists and req.mode == "ignore":
            return "the table exists and mode is ignore"
        if previous is None and req.mode in {"append_existing", "overwrite_existing", "replace"}:
            raise TableNotFoundError(
                f"{tgt.display} does not exist; create it first (create()/createOrReplace())"
            )
        if req.app_id is not None and req.app_version is not None:
            done = t.pending.txn_version(req.app_id)
            if done >= req.app_version:
                return f"txnAppId {req.app_id!r} already committed txnVersion {done}"
        return None

    def _planned(self, data: DataFrame, previous: TableState | None) -> tuple[WriteIntent, Plan]:
        """What Delta's write semantics make of the write, planned compliant and judged, before any
        data file exists (the judgement includes what delta-spark would fail on while writing)."""
        req = self.req
        intent = WriteIntent(
            mode="replace" if req.mode in REPLACE_MODES else req.mode,
            data_schema=parse_schema(json.loads(data.schema.json())),
            partition_by=req.partition_by,
            properties=req.properties,
            merge_schema=req.merge_schema,
            overwrite_schema=req.overwrite_schema,
        )
        composed = compose_metadata(intent, previous.metadata if previous else None)
        planned = plan(req.profile, composed, None, previous)
        judged = verdict.decide(
            verdict.Plan(req.profile, planned.metadata, planned.protocol, previous, asked=req.properties)
        )
        judged.raise_if_refused(f"(planning {self.target.display})")
        return intent, planned

    def _request(self, intent: WriteIntent, planned: Plan, previous: TableState | None) -> JsonDict:
        """What the JVM's pending transaction writes and commits."""
        return {
            "mode": "overwrite" if (intent.mode in OVERWRITE_MODES or intent.mode == "replace") else "append",
            "replaceSchema": previous is not None and intent.replaces_schema,
            "protocol": planned.protocol.to_json(),
            "metaData": planned.metadata.to_json(),
            "metadataChanged": previous is None or planned.metadata != previous.metadata,
            "options": self.req.options,
            "txnAppId": self.req.app_id,
            "txnVersion": self.req.app_version,
        }

    def _verified(
        self, t: transaction.Attempt, planned: Plan, previous: TableState | None, adds: list[AddFile]
    ) -> list[AddFile]:
        """The new files, judged from their footers before the commit; a refusal deletes them first.

        Read inside the attempt: an error here aborts it like a refusal (no orphan files)."""
        facts = [file_facts(self.location, a, io=self.io) for a in adds]
        judged = verdict.decide(
            verdict.PreCommit(self.req.profile, planned.metadata, planned.protocol, previous, facts)
        )
        if judged.refused:
            removed = t.abort()
            display = self.target.display
            log.warning("refused after writing: removed %d new data file(s) of %s", removed, display)
            judged.raise_if_refused(f"(verifying the new files of {display}; nothing committed)")
        return adds


def _catalog_identifier(spark: SparkSession, target: Target) -> str | None:
    """``db.tbl`` for a write through a Spark catalog name (the current database when the name has
    one part), the Iceberg identifier such a table gets by default; None for a path."""
    if target.table is None:
        return None
    parts = list(target.table)
    if len(parts) == 1:
        parts.insert(0, str(spark.catalog.currentDatabase()))
    return ".".join(parts[-2:])


def _sync_iceberg(
    spark: SparkSession,
    result: WriteResult,
    configuration: Mapping[str, str],
    identifier: str | None,
    io: FileIO,
) -> WriteResult:
    """The last step after a commit: Iceberg metadata (and catalog) for tables that ask for it.

    ``configuration`` is the table's properties as this write committed them, so a property set by
    this very write counts. A failure warns (``IcebergSyncWarning``) and never fails the write.
    """
    assert result.version is not None
    if not sync_requested(configuration):
        return result
    conf_catalog = spark.conf.get(CATALOG_CONF, None)
    # a first conversion reads every live file's footer: on the executors when the table is big
    with footers_read_by(ExecutorFooterReader.from_session(spark)):
        synced = sync_after_commit(
            result.location, result.version, configuration, conf_catalog, identifier, io=io
        )
    return dataclasses.replace(result, iceberg=synced)
