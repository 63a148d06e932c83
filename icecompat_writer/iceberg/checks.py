"""Whether a Delta table version may be converted: the rule catalog first, then the emitter's own checks.

Compliance is decided by the same rule catalog the writer enforces and ``icecompat check`` reports
(:func:`icecompat_writer.rules.verdict.decide`, at the ``IcebergRead`` moment), for the profile the
table declares, so the emitter never re-implements a rule and can never disagree with the checker about
what "compliant" means. Which rules apply is chosen by :func:`rule_set_for`:

- a table that declares a profile (``delta.enableIcebergCompatV3``, ``delta.enableIcebergWriterCompatV1``,
  ``delta.enableIcebergWriterCompatV3``; :func:`icecompat_writer.rules.detection.declared_profile`) is
  held to that profile's rules;
- a table on delta-spark's own IcebergCompatV2 without our writer profile is held to the rules of
  IcebergCompatV2 itself: writer-v1's rules without those of IcebergWriterCompatV1 (ids ``IWC1-*``,
  e.g. ``id`` mode and ``col-<id>`` physical names), which such a table never promised;
- a table that declares nothing is held to the default profile (``v3``), the one ``compat_write`` and
  ``icecompat upgrade`` would give it, so the refusal lists what it lacks in the catalog's words.

The emitter's own ``ICEBERG-EMIT-*`` checks cover only what the catalog does not: facts about this
emitter (types it has no Iceberg counterpart for; the format version asked for) and, for the
IcebergCompatV2 rule set, the column mapping mode, which the catalog checks only through the
profiles' own mode rules. An emitter check that a catalog rule of the chosen set covers is not
run, so no requirement is reported twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from icecompat_writer.deltalog.actions import Metadata, Protocol
from icecompat_writer.errors import CompatViolation, Violation
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.planning import DEFAULT_PROFILE, PROFILES, Profile
from icecompat_writer.rules import verdict
from icecompat_writer.rules.detection import declared_profile
from icecompat_writer.schema import CM_MODE

from .schema import ConvertedSchema, convert_schema, violation

__all__ = [
    "COMPAT_V2",
    "FORMAT_VERSION_PROPERTY",
    "RuleSet",
    "default_format_version",
    "file_violations",
    "requested_format_version",
    "row_tracking_enabled",
    "rule_set_for",
    "table_violations",
]

_WRITER_COMPAT_V1_RULES = "IWC1-"

# The table property that chooses the Iceberg format of a table's metadata (2 or 3), whatever its profile.
FORMAT_VERSION_PROPERTY = "icecompat.iceberg.format-version"
FORMAT_VERSIONS = (2, 3)

# delta-spark's IcebergCompatV2 without IcebergWriterCompatV1: the writer-v1 rules that are not
# IcebergWriterCompatV1's. Built from the catalog's own profile so a rule added there applies here too.
COMPAT_V2 = Profile(
    name="icebergCompatV2",
    title="IcebergCompatV2 without a writer profile (delta-spark's own)",
    properties=MappingProxyType({"delta.enableIcebergCompatV2": "true"}),
    features=("columnMapping", "icebergCompatV2"),
    default_column_mapping_mode="name",
    rule_ids=tuple(r for r in PROFILES["writer-v1"].rule_ids if not r.startswith(_WRITER_COMPAT_V1_RULES)),
)


@dataclass(frozen=True)
class RuleSet:
    """The catalog rules a table version is held to, and why those (for refusal messages)."""

    profile: Profile
    reason: str

    def covers(self, rule_ids: Iterable[str]) -> bool:
        """Whether every one of ``rule_ids`` is evaluated under this rule set."""
        return set(rule_ids) <= set(self.profile.rule_ids)

    def covers_any(self, rule_ids: Iterable[str]) -> bool:
        """Whether at least one of ``rule_ids`` is evaluated under this rule set."""
        return bool(set(rule_ids) & set(self.profile.rule_ids))


def _true(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "")).strip().lower() == "true"


def rule_set_for(metadata: Metadata) -> RuleSet:
    """The rules a table version is held to: its declared profile, IcebergCompatV2's, or the default."""
    declared = declared_profile(metadata.configuration)
    if declared is not None:
        return RuleSet(PROFILES[declared], f"declared profile {declared}")
    if _true(metadata.configuration, "delta.enableIcebergCompatV2"):
        return RuleSet(COMPAT_V2, "IcebergCompatV2 without a writer profile")
    return RuleSet(
        PROFILES[DEFAULT_PROFILE],
        f"no profile declared and IcebergCompatV2 off; checked against the default profile {DEFAULT_PROFILE}",
    )


def row_tracking_enabled(metadata: Metadata) -> bool:
    """Row tracking on and not suspended: every file then has a ``baseRowId``."""
    conf = metadata.configuration
    return _true(conf, "delta.enableRowTracking") and not _true(conf, "delta.rowTrackingSuspended")


def requested_format_version(metadata: Metadata) -> int | None:
    """The Iceberg format the table property ``icecompat.iceberg.format-version`` asks for (None: unset).

    Refused (``ICEBERG-EMIT-FORMAT-VERSION``, naming the property) when it is not 2 or 3: guessing a
    format would write metadata the user's readers may not read.
    """
    raw = metadata.configuration.get(FORMAT_VERSION_PROPERTY)
    if raw is None or not str(raw).strip():
        return None
    text = str(raw).strip()
    if text in {str(v) for v in FORMAT_VERSIONS}:
        return int(text)
    raise CompatViolation(
        [
            violation(
                "ICEBERG-EMIT-FORMAT-VERSION",
                "",
                variant="property",
                key=FORMAT_VERSION_PROPERTY,
                observed=text,
                expected="2 or 3",
            )
        ],
        "",
    )


def default_format_version(metadata: Metadata) -> int:
    """The format a new Iceberg tree is written in when no run asks for one: the table property
    ``icecompat.iceberg.format-version`` when set, else v3 for IcebergCompatV3 tables (they carry row
    tracking) and v2 otherwise."""
    requested = requested_format_version(metadata)
    if requested is not None:
        return requested
    return 3 if _true(metadata.configuration, "delta.enableIcebergCompatV3") else 2


# Emitter checks and the catalog rules that make them redundant: any one of the mode rules (each
# allows a subset of id/name), all of the others together.
_MODE_COVERED_BY = ("ICV3-COLUMN-MAPPING-MODE", "IWC1-ID-MODE")
_ROW_TRACKING_COVERED_BY = ("ICV3-ROW-TRACKING", "ICV3-ROW-TRACKING-NOT-SUSPENDED")


def _emitter_violations(rules: RuleSet, metadata: Metadata, format_version: int) -> list[Violation]:
    """The table-level ICEBERG-EMIT-* checks that no rule of ``rules`` covers."""
    conf = metadata.configuration
    out: list[Violation] = []
    mode = str(conf.get(CM_MODE, "none")).strip().lower()
    if not rules.covers_any(_MODE_COVERED_BY) and mode not in ("id", "name"):
        out.append(
            violation(
                "ICEBERG-EMIT-COLUMN-MAPPING",
                "",
                observed=mode,
                expected="id or name",
                key=CM_MODE,
            )
        )
    covered = rules.covers(_ROW_TRACKING_COVERED_BY)
    if format_version >= 3 and not covered and not row_tracking_enabled(metadata):
        out.append(
            violation(
                "ICEBERG-EMIT-FORMAT-VERSION",
                "",
                observed="delta.enableRowTracking is not true",
                expected="true",
            )
        )
    return out


def table_violations(
    protocol: Protocol,
    metadata: Metadata,
    format_version: int,
    files: Iterable[DataFileFacts] = (),
) -> tuple[ConvertedSchema | None, list[Violation]]:
    """Check one table version: the catalog rules of its rule set, then the emitter's own checks.

    ``files`` are the facts of the data files to hold to the catalog's file rules (the live files of
    the version being converted to; none for intermediate versions, whose files are gone or checked
    as they are converted). Returns the converted schema (None when the table is refused before it is
    converted) and every violation. The schema is converted only once the catalog is satisfied: its
    rules already guarantee the ids the conversion needs, so a schema the catalog refuses would only
    be reported twice.
    """
    rules = rule_set_for(metadata)
    # the table as an Iceberg reader meets it: delta-spark's limits on writing it are not Iceberg's
    read = verdict.IcebergRead(rules.profile, metadata, protocol, tuple(files))
    out = list(verdict.decide(read).violations)
    out.extend(_emitter_violations(rules, metadata, format_version))
    if out:
        return None, out
    converted, schema_violations = convert_schema(metadata.schema_model, format_version)
    out.extend(schema_violations)
    out.extend(_partition_violations(metadata, converted))
    return converted, out


def file_violations(
    protocol: Protocol, metadata: Metadata, files: Iterable[DataFileFacts]
) -> list[Violation]:
    """The violations of the catalog's file rules alone by ``files`` (a batch of a table's live files).

    Every file rule judges each file on its own, so a table's files can be judged in batches whose
    facts are dropped after each: :func:`table_violations` with all the files finds exactly the
    violations of :func:`table_violations` without files plus those of every batch (the schema is
    converted only when neither finds any).
    """
    rules = rule_set_for(metadata)
    batch = verdict.IcebergFiles(rules.profile, metadata, protocol, tuple(files))
    return list(verdict.decide(batch).violations)


def _partition_violations(metadata: Metadata, converted: ConvertedSchema) -> list[Violation]:
    """Identity partitions need a top-level primitive column (the catalog does not check the type)."""
    out: list[Violation] = []
    for name in metadata.partition_columns:
        col = converted.top.get(name)
        if col is None:
            if all(f.name != name for f in metadata.schema_model.top):
                out.append(
                    violation(
                        "ICEBERG-EMIT-PARTITION-COLUMN",
                        name,
                    )
                )
            continue
        if not isinstance(col.iceberg_type, str):
            out.append(
                violation(
                    "ICEBERG-EMIT-PARTITION-COLUMN",
                    name,
                    variant="type",
                    observed=col.iceberg_type.get("type"),
                )
            )
    return out
