"""delta-spark 4.4.0 as an oracle for the IcebergCompatV2/V3 rules.

Each case is one ``CREATE TABLE delta.`<path>` (...) USING delta TBLPROPERTIES (...)`` run by
delta-spark itself, whose IcebergCompat checks accept it (often after turning on column mapping or row
tracking on their own) or refuse it. Our verdict on the same request is what ``plan`` refuses it with;
on an accepted table it is also what ``validate`` reports on the state delta-spark committed (read back
with ``read_snapshot``). IcebergCompatV3 requests are judged with the ``v3`` profile; IcebergCompatV2
requests with ``writer-v1``, restricted to the rules delta-spark can judge (``delta_spark_judges``):
delta-spark does not implement IcebergWriterCompatV1, so e.g. byte columns or ``col-<uuid>`` physical
names are outside this oracle (the Kernel oracle covers them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.rules.profiles import get_profile
from icecompat_writer.storage import io_for
from tests.oracles.support import (
    DOCS,
    SECTION,
    Difference,
    delta_spark_judges,
    error_text,
    planned_rules,
    sql,
    state_rules,
)

VIOLATION = "DELTA_ICEBERG_COMPAT_VIOLATION."


def _frozen(d: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(d))


def v2(**extra: str) -> Mapping[str, str]:
    """IcebergCompatV2 in id mode (what writer-v1 needs), plus ``extra`` (keys use _ for .)."""
    props = {"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "id"}
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return _frozen(props)


def v3(**extra: str) -> Mapping[str, str]:
    props = {"delta.enableIcebergCompatV3": "true"}
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return _frozen(props)


@dataclass(frozen=True)
class SparkCase:
    """One CREATE request. ``refusal``: delta-spark's error class when it refuses (None: it accepts).
    ``rules``: the in-scope rule ids ``plan`` refuses the request with where delta-spark refuses too."""

    id: str
    profile: str
    columns: tuple[tuple[str, str], ...]
    properties: Mapping[str, str]
    refusal: str | None = None
    rules: frozenset[str] = frozenset()
    partitioned_by: tuple[str, ...] = ()
    defaults: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def _split(columns: str) -> list[str]:
    """Split a column list at its top-level commas (not those inside <...> or (...))."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(columns):
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(columns[start:i])
            start = i + 1
    return [*out, columns[start:]]


def case(
    id: str,
    profile: str,
    columns: str,
    properties: Mapping[str, str],
    refusal: str | None = None,
    rules: tuple[str, ...] = (),
    partitioned_by: tuple[str, ...] = (),
    defaults: Mapping[str, str] | None = None,
) -> SparkCase:
    cols = tuple((name, typ.strip()) for name, typ in (c.strip().split(" ", 1) for c in _split(columns)))
    return SparkCase(
        id,
        profile,
        cols,
        properties,
        None if refusal is None else VIOLATION + refusal,
        frozenset(rules),
        partitioned_by,
        MappingProxyType(dict(defaults or {})),
    )


W1 = "writer-v1"
UNSUPPORTED, WRONG_PROPERTY = "UNSUPPORTED_DATA_TYPE", "WRONG_REQUIRED_TABLE_PROPERTY"
DEFAULTS_OK = v3(delta_feature_allowColumnDefaults="supported")
# fmt: off
CASES: tuple[SparkCase, ...] = (
    # --- IcebergCompatV3 (profile v3) ---
    case("v3-plain", "v3", "id int, s string", v3()),
    case("v3-variant", "v3", "id int, v variant", v3()),
    case("v3-byte-short-nested", "v3", "b tinyint, m map<string, array<smallint>>", v3()),
    case("v3-void", "v3", "id int, n void", v3(), UNSUPPORTED, ("ICV3-TYPE-ALLOWLIST",)),
    case("v3-nested-void", "v3", "id int, s struct<n: void>", v3(), UNSUPPORTED, ("ICV3-TYPE-ALLOWLIST",)),
    case("v3-nested-ids", "v3", "id int, a array<struct<x: int, m: map<string, array<int>>>>", v3()),
    case("v3-timestamp-ntz", "v3", "id int, t timestamp_ntz", v3()),
    case("v3-id-mode", "v3", "id int", v3(delta_columnMapping_mode="id")),
    case("v3-no-column-mapping", "v3", "id int", v3(delta_columnMapping_mode="none"), WRONG_PROPERTY,
         ("ICV3-COLUMN-MAPPING-MODE",)),
    case("v3-deletion-vectors", "v3", "id int", v3(delta_enableDeletionVectors="true")),
    case("v3-row-tracking-off", "v3", "id int", v3(delta_enableRowTracking="false"), WRONG_PROPERTY,
         ("ICV3-ROW-TRACKING",)),
    case("v3-row-tracking-suspended", "v3", "id int", v3(delta_rowTrackingSuspended="true")),
    case("v2-and-v3", "v3", "id int", v3(delta_enableIcebergCompatV2="true"), "VERSION_MUTUAL_EXCLUSIVE",
         ("ICV3-NO-OLDER-COMPAT",)),
    case("v3-partitioned", "v3", "id int, p string", v3(), partitioned_by=("p",)),
    case("v3-expression-default", "v3", "id int, t timestamp", DEFAULTS_OK, UNSUPPORTED,
         ("ICV3-LITERAL-DEFAULTS",), defaults={"t": "current_timestamp()"}),
    case("v3-typed-date-default", "v3", "id int, d date", DEFAULTS_OK, UNSUPPORTED,
         ("ICV3-LITERAL-DEFAULTS",), defaults={"d": "DATE '2024-01-01'"}),
    # --- IcebergCompatV2 (profile writer-v1, in-scope rules only) ---
    case("v2-plain", W1, "id int, s string", v2()),
    case("v2-variant", W1, "id int, v variant", v2(), UNSUPPORTED, ("ICV2-TYPE-ALLOWLIST",)),
    case("v2-nested-variant", W1, "id int, a array<variant>", v2(), UNSUPPORTED, ("ICV2-TYPE-ALLOWLIST",)),
    case("v2-byte-short", W1, "b tinyint, s struct<h: smallint>", v2()),
    case("v2-name-mode", W1, "id int", v2(delta_columnMapping_mode="name")),
    case("v2-no-column-mapping", W1, "id int", v2(delta_columnMapping_mode="none"), WRONG_PROPERTY,
         ("IWC1-ID-MODE",)),
    case("v2-deletion-vectors", W1, "id int", v2(delta_enableDeletionVectors="true"),
         "DELETION_VECTORS_SHOULD_BE_DISABLED", ("ICV2-NO-DELETION-VECTORS",)),
    case("v1-and-v2", W1, "id int", v2(delta_enableIcebergCompatV1="true"), "VERSION_MUTUAL_EXCLUSIVE",
         ("ICV2-NO-V1",)),
    case("v2-partitioned-date", W1, "id int, d date", v2(), partitioned_by=("d",)),
)
# fmt: on

# delta-spark accepts, we refuse (exact in-scope rule ids).
STRICTER: Mapping[str, Difference] = {
    "v3-row-tracking-suspended": Difference(
        frozenset({"ICV3-ROW-TRACKING-NOT-SUSPENDED"}),
        "delta.rowTrackingSuspended=true stops row ids from being assigned, and IcebergCompatV3 relies on "
        "them; delta-spark only checks delta.enableRowTracking",
    ),
    "v2-name-mode": Difference(
        frozenset({"IWC1-ID-MODE"}),
        "writer-v1 is IcebergWriterCompatV1, which requires id mode; IcebergCompatV2 alone (all that "
        "delta-spark checks) accepts name mode",
    ),
}

# delta-spark refuses, we accept.
LOOSER: Mapping[str, Difference] = {}


def request_metadata(spark: Any, c: SparkCase) -> Metadata:
    """Our Metadata for the CREATE request: Spark's schema of the column list, the defaults as Spark
    stores them (CURRENT_DEFAULT), the properties (``delta.feature.*`` are protocol requests, not
    configuration: plan adds the features the schema needs)."""
    ddl = ", ".join(f"{n} {t}" for n, t in c.columns)
    schema = json.loads(spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl).json())
    for f in schema["fields"]:
        if f["name"] in c.defaults:
            f["metadata"]["CURRENT_DEFAULT"] = c.defaults[f["name"]]
    config = {k: v for k, v in c.properties.items() if not k.startswith("delta.feature.")}
    return Metadata(json.dumps(schema), c.partitioned_by, MappingProxyType(config))


def create_sql(path: Path, c: SparkCase) -> str:
    cols = ", ".join(
        f"{n} {t}" + (f" DEFAULT {c.defaults[n]}" if n in c.defaults else "") for n, t in c.columns
    )
    part = f" PARTITIONED BY ({', '.join(c.partitioned_by)})" if c.partitioned_by else ""
    props = ", ".join(f"'{k}'='{v}'" for k, v in c.properties.items())
    return f"CREATE TABLE delta.`{path}` ({cols}) USING delta{part} TBLPROPERTIES ({props})"


def in_scope(rules: frozenset[str]) -> frozenset[str]:
    return frozenset(r for r in rules if delta_spark_judges(r))


def expected_ours(c: SparkCase) -> frozenset[str]:
    if c.id in STRICTER:
        return STRICTER[c.id].rules
    if c.id in LOOSER:
        return frozenset()
    return c.rules


@pytest.mark.spark
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_delta_spark_and_we_agree(spark: Any, tmp_path: Path, c: SparkCase) -> None:
    path = tmp_path / "t"
    planned = in_scope(planned_rules(c.profile, request_metadata(spark, c)))
    refusal: str | None = None
    try:
        sql(spark, create_sql(path, c))
    except Exception as e:  # delta-spark's refusal (or any other error: then the refusal check fails)
        refusal = error_text(e)

    if c.refusal is None:
        assert refusal is None, f"delta-spark refused the CREATE: {refusal}"
        snap = read_snapshot(path, io=io_for(path))
        on_table = in_scope(state_rules(c.profile, snap.metadata, snap.protocol))
        assert on_table == expected_ours(c), f"validate on delta-spark's table: {sorted(on_table)}"
    else:
        assert refusal is not None, "delta-spark accepted the CREATE"
        assert c.refusal in refusal, refusal
    assert planned == expected_ours(c), f"plan of the same request: {sorted(planned)}"


def test_difference_tables_are_consistent() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    by_id = {c.id: c for c in CASES}
    assert set(STRICTER) <= {c.id for c in CASES if c.refusal is None}
    assert set(LOOSER) <= {c.id for c in CASES if c.refusal is not None}
    for c in CASES:
        profile_rules = set(get_profile(c.profile).rule_ids)
        assert c.rules <= profile_rules and all(delta_spark_judges(r) for r in c.rules), c.id
        if c.refusal is None:
            assert not c.rules, f"{c.id}: an accepted case lists our rules only in STRICTER"
        else:
            assert bool(c.rules) != (c.id in LOOSER), f"{c.id}: refusals need rules, or a LOOSER entry"
    for table in (STRICTER, LOOSER):
        for cid, d in table.items():
            assert d.reason and d.rules <= set(get_profile(by_id[cid].profile).rule_ids), cid
            assert all(delta_spark_judges(r) for r in d.rules), cid


def test_differences_are_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text
    section = text.split(SECTION, 1)[1]
    for d in (*STRICTER.values(), *LOOSER.values()):
        for rule in d.rules:
            assert f"`{rule}`" in section, rule


# A write default on an IcebergCompatV3 column, per type: delta-spark 4.4 accepts some texts and
# refuses others (its own check, or Spark's before it); ICV3-LITERAL-DEFAULTS must refuse exactly the
# same ones, so that compat_write refuses them before any file instead of failing at the commit.
# fmt: off
DEFAULT_CASES: tuple[tuple[str, str], ...] = (
    ("int", "5"), ("int", "-3"), ("int", "+5"), ("int", "007"), ("int", "'5'"), ("int", "5L"),
    ("int", "1+1"), ("int", "NULL"), ("int", "5.0"),
    ("bigint", "5"), ("bigint", "5L"), ("bigint", "5l"), ("bigint", "-5L"), ("bigint", "'5'"),
    ("bigint", "9223372036854775808"),
    ("smallint", "5"), ("smallint", "5S"), ("smallint", "70000"), ("tinyint", "5"), ("tinyint", "5Y"),
    ("double", "4.95"), ("double", "1e3"), ("double", "4.95D"), ("double", ".5"), ("double", "-1.5e-3"),
    ("double", "5."), ("double", "4.95f"), ("double", "'4.95'"), ("double", "NaN"), ("double", "'NaN'"),
    ("float", "1.5"), ("float", "1.5F"), ("float", "1.5D"), ("float", "'1.5'"),
    ("decimal(5,2)", "1.23"), ("decimal(5,2)", "1"), ("decimal(5,2)", "-1.2"), ("decimal(5,2)", "1.2e1"),
    ("decimal(5,2)", "001.23"), ("decimal(5,2)", "1.234"), ("decimal(5,2)", "123.45BD"),
    ("decimal(5,2)", "'1.23'"), ("decimal(5,2)", "1234.5"),
    ("string", "'abc'"), ("string", '"abc"'), ("string", "''"), ("string", "'it''s'"),
    ("string", "'a\\'b'"), ("string", "NULL"), ("string", "5"), ("string", "r'x'"),
    ("binary", "X'0A'"), ("binary", "x'0a'"), ("binary", "X''"), ("binary", "'abc'"),
    ("boolean", "true"), ("boolean", "FALSE"), ("boolean", "True"), ("boolean", "'true'"), ("boolean", "1"),
    ("date", "'2024-01-01'"), ("date", "DATE '2024-01-01'"), ("date", "'2024-1-1'"), ("date", "NULL"),
    ("date", "'2024-02-30'"), ("date", "'+2024-01-01'"), ("date", "'2024-01-01T00:00:00'"),
    ("timestamp", "'2024-01-01T00:00:00Z'"), ("timestamp", "'2024-01-01 00:00:00'"),
    ("timestamp", "'2024-01-01T00:00:00'"), ("timestamp", "'2024-01-01T00:00:00+01:00'"),
    ("timestamp", "'2024-01-01T00:00:00.123456Z'"), ("timestamp", "'2024-01-01T00:00'"),
    ("timestamp", "TIMESTAMP '2024-01-01 00:00:00'"), ("timestamp", "'2024-01-01'"),
    ("timestamp", "'2024-01-01 00:00:00.5'"), ("timestamp", "'2024-01-01T00:00:00+0100'"),
    ("timestamp", "'2024-01-01T24:00:00Z'"), ("timestamp", "'2024-01-01T00:00:00.1234567891Z'"),
    ("timestamp_ntz", "'2024-01-01T00:00:00'"), ("timestamp_ntz", "'2024-01-01 00:00:00'"),
    ("timestamp_ntz", "'2024-01-01T00:00'"), ("timestamp_ntz", "TIMESTAMP_NTZ '2024-01-01 00:00:00'"),
    ("timestamp_ntz", "'2024-01-01T00:00:00Z'"), ("timestamp_ntz", "'2024-01-01 00:00:00.5'"),
    ("array<int>", "array(1)"), ("array<int>", "NULL"), ("struct<a: int>", "NULL"),
)
# fmt: on


@pytest.mark.spark
@pytest.mark.parametrize(("type_", "default"), DEFAULT_CASES, ids=lambda v: str(v))
def test_write_defaults_are_refused_exactly_where_delta_spark_refuses(
    spark: Any, tmp_path: Path, type_: str, default: str
) -> None:
    c = case("default", "v3", f"id int, c {type_}", DEFAULTS_OK, defaults={"c": default})
    refusal: str | None = None
    try:
        sql(spark, create_sql(tmp_path / "t", c))
    except Exception as e:
        refusal = error_text(e)
    ours = "ICV3-LITERAL-DEFAULTS" in planned_rules("v3", request_metadata(spark, c))
    assert ours == (refusal is not None), f"delta-spark: {refusal or 'accepted'}; we refuse: {ours}"
    if refusal is not None:
        # delta-spark's own check, or Spark's before it (a value out of the type's range, an impossible date)
        spark_checks = ("INVALID_DEFAULT_VALUE", "CAST_OVERFLOW")
        assert VIOLATION + UNSUPPORTED in refusal or any(k in refusal for k in spark_checks), refusal
