"""What the oracle tests share: our verdicts, the difference tables' entries, Delta Kernel through py4j.

An oracle case compares two verdicts on the same table state (or the same CREATE request): the oracle's
(delta-spark's IcebergCompat checks, or Delta Kernel's validators) and ours (the rule ids `plan` refuses
with, or `validate` reports). Where the two differ on purpose, the case is listed in the test module's
explicit STRICTER or LOOSER table with the reason, and the test asserts the difference exactly: a
difference that disappears, or one that is not listed, fails the test.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.planning import plan, validate
from icecompat_writer.rules.catalog import RULES_BY_ID
from icecompat_writer.rules.model import Scope
from icecompat_writer.schema import parse_schema
from tests.support import unguarded_sql

# The docs section that lists every difference the oracle tests assert.
DOCS = Path(__file__).resolve().parents[2] / "docs" / "profiles-spec.md"
SECTION = "## Agreement with Delta Kernel and delta-spark"

# The rules a table state can be judged on without data files or a previous version.
STATE_SCOPES = frozenset({Scope.PROTOCOL, Scope.METADATA, Scope.SCHEMA})

# Clauses of the IcebergWriterCompat RFC and of our own docs: delta-spark 4.4.0 does not implement
# IcebergWriterCompat (our agent only teaches it the feature names), so rules resting on these clauses
# alone are outside what delta-spark can judge.
_WRITER_COMPAT_ONLY_PREFIXES = ("delta-rfc-iceberg-writer-compat-v1.md#", "docs/")


@dataclass(frozen=True)
class Difference:
    """A listed disagreement with an oracle and why.

    ``rules``: in a STRICTER table, exactly the rule ids we report where the oracle accepts; in a LOOSER
    table (we report nothing), the rule whose check is looser than the oracle's.
    """

    rules: frozenset[str]
    reason: str


def rule_ids(violations: Iterable[Violation]) -> frozenset[str]:
    return frozenset(v.rule for v in violations)


def delta_spark_judges(rule_id: str) -> bool:
    """Whether delta-spark's IcebergCompatV2/V3 checks cover the rule's subject.

    True when the rule cites at least one clause of the Delta protocol or the IcebergCompatV3 RFC (not
    only the IcebergWriterCompat RFC or docs/profiles.md). IWC1-ID-MODE is in scope this way: it is
    also how writer-v1 implements IcebergCompatV2's column-mapping requirement.
    """
    rule = RULES_BY_ID[rule_id]
    return any(not c.startswith(_WRITER_COMPAT_ONLY_PREFIXES) for c in (rule.clause, *rule.also))


def planned_rules(profile: str, metadata: Metadata, protocol: Protocol | None = None) -> frozenset[str]:
    """The rule ids `plan` refuses a new table with (empty: plan makes it compliant)."""
    try:
        plan(profile, metadata, protocol)
    except CompatViolation as e:
        return rule_ids(e.violations)
    return frozenset()


def state_rules(profile: str, metadata: Metadata, protocol: Protocol) -> frozenset[str]:
    """The rule ids `validate` reports on a table state (protocol, metadata, schema; no files)."""
    return rule_ids(validate(profile, metadata, protocol, files=(), scopes=STATE_SCOPES))


def error_text(e: BaseException) -> str:
    """A JVM error's class and message (py4j and pyspark errors alike), for matching a refusal."""
    jx = getattr(e, "java_exception", None)
    if jx is not None:
        return f"{jx.getClass().getName()}: {jx.getMessage()}"
    return f"{type(e).__name__}: {e}"


def sql(spark: Any, text: str) -> None:
    """Run ``text`` as delta-spark alone runs it: the oracle is delta-spark, so the session guard
    (on by default in the shared session) must not plan or refuse it."""
    unguarded_sql(spark, text)


# --------------------------------------------------------------------------------------------------
# Edits of a table state (for cases delta-spark SQL cannot produce in isolation)
# --------------------------------------------------------------------------------------------------

State = tuple[Metadata, Protocol]


@dataclass(frozen=True)
class Edit:
    """A named change of a (Metadata, Protocol) pair, applied to a real table's state."""

    name: str
    apply: Callable[[Metadata, Protocol], State]

    def __repr__(self) -> str:
        return self.name


def set_properties(props: Mapping[str, str]) -> Edit:
    def apply(md: Metadata, p: Protocol) -> State:
        return md.with_configuration({**md.configuration, **props}), p

    return Edit(f"set {dict(props)}", apply)


def add_features(*names: str, reader: bool = False) -> Edit:
    """List table features in writerFeatures (and readerFeatures when ``reader``)."""

    def apply(md: Metadata, p: Protocol) -> State:
        rf = p.reader_features
        if reader:
            rf = frozenset(rf or ()) | set(names)
        return md, replace(
            p, reader_features=rf, writer_features=frozenset(p.writer_features or ()) | set(names)
        )

    return Edit(f"add features {names}", apply)


def add_column(name: str, type_: Any, metadata: Mapping[str, Any] | None = None) -> Edit:
    """Append a top-level column with the next column-mapping id and physical name col-<id>.

    ``type_`` is Delta's JSON for the type; nested ids for an array/map type are assigned after the
    column's id under ``<physical name>.element`` / ``.key`` / ``.value`` (one level).
    """

    def apply(md: Metadata, p: Protocol) -> State:
        schema = md.schema
        next_id = int(md.configuration["delta.columnMapping.maxColumnId"]) + 1
        meta: dict[str, Any] = {
            "delta.columnMapping.id": next_id,
            "delta.columnMapping.physicalName": f"col-{next_id}",
        }
        nested: dict[str, int] = {}
        last = next_id
        if isinstance(type_, dict) and type_.get("type") in ("array", "map"):
            parts = ("element",) if type_["type"] == "array" else ("key", "value")
            for part in parts:
                last += 1
                nested[f"col-{next_id}.{part}"] = last
        meta["delta.columnMapping.nested.ids"] = nested
        meta.update(metadata or {})
        schema["fields"].append({"name": name, "type": type_, "nullable": True, "metadata": meta})
        config = {**md.configuration, "delta.columnMapping.maxColumnId": str(last)}
        return md.with_schema(parse_schema(schema)).with_configuration(config), p

    return Edit(f"add column {name} {json.dumps(type_)}", apply)


def _rename_physical(struct: dict[str, Any]) -> None:
    for f in struct["fields"]:
        meta = f["metadata"]
        old = meta["delta.columnMapping.physicalName"]
        new = f"col-{meta['delta.columnMapping.id']}"
        meta["delta.columnMapping.physicalName"] = new
        ids = meta.get("delta.columnMapping.nested.ids")
        if ids:
            meta["delta.columnMapping.nested.ids"] = {
                (new + k[len(old) :] if k.startswith(old + ".") else k): v for k, v in ids.items()
            }
        stack = [f["type"]]
        while stack:
            t = stack.pop()
            if not isinstance(t, dict):
                continue
            if t["type"] == "struct":
                _rename_physical(t)
            elif t["type"] == "array":
                stack.append(t["elementType"])
            elif t["type"] == "map":
                stack.extend((t["keyType"], t["valueType"]))


def col_id_physical_names() -> Edit:
    """Rename every physical name to col-<its id> (delta-spark SQL names columns col-<uuid>)."""

    def apply(md: Metadata, p: Protocol) -> State:
        schema = copy.deepcopy(md.schema)
        _rename_physical(schema)
        return md.with_schema(parse_schema(schema)), p

    return Edit("physical names col-<id>", apply)


def apply_edits(state: State, edits: Iterable[Edit]) -> State:
    md, p = state
    for e in edits:
        md, p = e.apply(md, p)
    return md, p


# --------------------------------------------------------------------------------------------------
# Delta Kernel 4.4.0 (delta-kernel-api/defaults jars on the session's classpath), through py4j
# --------------------------------------------------------------------------------------------------

# profile -> (validator class in io.delta.kernel.internal.icebergcompat, its static entry point)
_KERNEL_VALIDATORS = {
    "writer-v1": (
        "IcebergWriterCompatV1MetadataValidatorAndUpdater",
        "validateAndUpdateIcebergWriterCompatV1Metadata",
    ),
    "writer-v3": (
        "IcebergWriterCompatV3MetadataValidatorAndUpdater",
        "validateAndUpdateIcebergWriterCompatV3Metadata",
    ),
}


@dataclass(frozen=True)
class KernelVerdict:
    """``accept``: no exception and no metadata change; ``refuse``: it threw (``detail`` = class:
    message); ``update``: it returned changed metadata (``detail`` = the new schema and configuration)."""

    kind: str
    detail: str = ""


class Kernel:
    """Delta Kernel's Iceberg-compat validators, fed with Kernel actions built from the log's JSON."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.jvm = spark._jvm
        self.k = self.jvm.io.delta.kernel
        self._engine: Any = None

    # Java collections (built explicitly: no reliance on py4j's auto-conversion)
    def _list(self, items: Iterable[Any]) -> Any:
        out = self.jvm.java.util.ArrayList()
        for x in items:
            out.add(x)
        return out

    def _set(self, items: Iterable[Any]) -> Any:
        out = self.jvm.java.util.HashSet()
        for x in items:
            out.add(x)
        return out

    def _map(self, items: Mapping[str, str]) -> Any:
        out = self.jvm.java.util.HashMap()
        for k, v in items.items():
            out.put(k, v)
        return out

    def metadata(self, md: Metadata) -> Any:
        """A Kernel ``Metadata`` with the same fields as the log's metaData action."""
        k = self.k
        optional = self.jvm.java.util.Optional
        schema = k.internal.types.DataTypeJsonSerDe.deserializeStructType(md.schema_string)
        partitions = k.internal.util.VectorUtils.buildArrayValue(
            self._list(md.partition_columns), k.types.StringType.STRING
        )
        config = k.internal.util.VectorUtils.stringStringMapValue(self._map(md.configuration))
        fmt = k.internal.actions.Format(md.format_provider, self._map(md.format_options))
        created = (
            optional.empty()
            if md.created_time is None
            else optional.of(self.jvm.java.lang.Long.valueOf(str(md.created_time)))
        )
        return k.internal.actions.Metadata(
            md.id,
            optional.ofNullable(md.name),
            optional.ofNullable(md.description),
            fmt,
            md.schema_string,
            schema,
            partitions,
            created,
            config,
        )

    def protocol(self, p: Protocol) -> Any:
        """A Kernel ``Protocol``; absent feature lists become empty sets (as Kernel's log reader does)."""
        return self.k.internal.actions.Protocol(
            p.min_reader_version,
            p.min_writer_version,
            self._set(p.reader_features or ()),
            self._set(p.writer_features or ()),
        )

    def load(self, path: Path, version: int) -> tuple[Any, Any]:
        """Kernel's own reading of the table (DefaultEngine): its Metadata and Protocol at ``version``."""
        if self._engine is None:
            hadoop_conf = self.spark._jsc.hadoopConfiguration()
            self._engine = self.k.defaults.engine.DefaultEngine.create(hadoop_conf)
        snapshot = self.k.Table.forPath(self._engine, str(path)).getSnapshotAsOfVersion(self._engine, version)
        return snapshot.getMetadata(), snapshot.getProtocol()

    def verdict(self, profile: str, kernel_metadata: Any, kernel_protocol: Any) -> KernelVerdict:
        """Run the profile's Kernel validator on an existing table's state (isCreatingNewTable=false,
        so Kernel validates instead of filling in defaults; no previous protocol)."""
        cls, method = _KERNEL_VALIDATORS[profile]
        validator = getattr(self.k.internal.icebergcompat, cls)
        try:
            updated = getattr(validator, method)(
                False, kernel_metadata, kernel_protocol, self.jvm.java.util.Optional.empty()
            )
        except Exception as e:  # a KernelException (or another JVM error) is the refusal
            return KernelVerdict("refuse", error_text(e))
        if updated.isPresent():
            new = updated.get()
            return KernelVerdict("update", f"{new.getSchemaString()} {new.getConfiguration()}")
        return KernelVerdict("accept")
