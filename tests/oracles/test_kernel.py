"""Delta Kernel 4.4.0 as an oracle for the writer profiles.

Kernel's ``IcebergWriterCompatV1MetadataValidatorAndUpdater`` / ``...V3...`` run on the state of a real
table: written by ``compat_write`` (physical names ``col-<id>``) or by delta-spark SQL (``col-<uuid>``),
then changed with delta-spark's ALTER TABLE; a few cases change that state further where SQL cannot
isolate the feature (``Edit``). Kernel gets its ``Metadata``/``Protocol`` built from the same log JSON
our ``validate`` reads; for unedited states Kernel's own log reader (DefaultEngine) must give the same
verdict, which checks that construction. Kernel throws at the first problem, so a refusal is compared
as a verdict (and a pinned fragment of Kernel's message), while our side is the exact set of rule ids.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from icecompat_writer.deltalog.snapshot import read_snapshot
from icecompat_writer.jvm import bridge
from icecompat_writer.rules.profiles import get_profile
from icecompat_writer.storage import io_for
from icecompat_writer.writing.api import compat_write
from tests.oracles.support import (
    DOCS,
    SECTION,
    Difference,
    Edit,
    Kernel,
    add_column,
    add_features,
    apply_edits,
    col_id_physical_names,
    set_properties,
    sql,
    state_rules,
)

W1 = "writer-v1"
W3 = "writer-v3"
CREATED = "created"

W1_PROPS = "'delta.enableIcebergCompatV2'='true', 'delta.enableIcebergWriterCompatV1'='true'"
W3_PROPS = "'delta.enableIcebergCompatV3'='true', 'delta.enableIcebergWriterCompatV3'='true'"

# Tables made with delta-spark SQL: columns and properties (physical names col-<uuid>).
ID_MODE = ", 'delta.columnMapping.mode'='id'"
SQL_TABLES: Mapping[str, tuple[str, str]] = {
    "sql-w1-id": ("id int, s struct<a: int>, arr array<int>", W1_PROPS + ID_MODE),
    "sql-w1-name": ("id int, s struct<a: int>", W1_PROPS + ", 'delta.columnMapping.mode'='name'"),
    "sql-w1-generated": ("id int, g int GENERATED ALWAYS AS (id * 2)", W1_PROPS + ID_MODE),
    "sql-w3-id": ("id int, m map<string, array<int>>", W3_PROPS + ID_MODE),
    "sql-w3-identity": ("id int, i bigint GENERATED ALWAYS AS IDENTITY", W3_PROPS + ID_MODE),
}

# ALTER TABLE steps on the compat_write tables, in order (each step's state is a case's table version).
W1_STEPS: tuple[tuple[str, str], ...] = (
    ("cdf-on", "SET TBLPROPERTIES ('delta.enableChangeDataFeed'='true')"),
    ("cdf-off", "SET TBLPROPERTIES ('delta.enableChangeDataFeed'='false')"),
    ("check", "ADD CONSTRAINT non_negative CHECK (id >= 0)"),
    ("check-dropped", "DROP CONSTRAINT non_negative"),
    ("row-tracking-on", "SET TBLPROPERTIES ('delta.enableRowTracking'='true')"),
    ("row-tracking-off", "SET TBLPROPERTIES ('delta.enableRowTracking'='false')"),
    ("tinyint", "ADD COLUMNS (t tinyint)"),
)
W3_STEPS: tuple[tuple[str, str], ...] = (
    ("dv-on", "SET TBLPROPERTIES ('delta.enableDeletionVectors'='true')"),
    ("cdf-on", "SET TBLPROPERTIES ('delta.enableChangeDataFeed'='true')"),
    ("cdf-off", "SET TBLPROPERTIES ('delta.enableChangeDataFeed'='false')"),
    ("tinyint", "ADD COLUMNS (t tinyint)"),
)


@dataclass(frozen=True)
class KernelCase:
    """``refusal``: a fragment of Kernel's exception text (None: Kernel accepts). ``rules``: the rule ids
    ``validate`` reports where Kernel refuses too."""

    id: str
    profile: str
    table: str
    state: str = CREATED
    refusal: str | None = None
    rules: frozenset[str] = frozenset()
    edits: tuple[Edit, ...] = ()


def kcase(
    id: str,
    profile: str,
    table: str,
    state: str = CREATED,
    refusal: str | None = None,
    rules: tuple[str, ...] = (),
    edits: tuple[Edit, ...] = (),
) -> KernelCase:
    return KernelCase(id, profile, table, state, refusal, frozenset(rules), edits)


PHYSICAL = "physical names be equal to 'col-[fieldId]'"
NAME_MODE = "'name' for the property 'delta.columnMapping.mode'"
SHORT_ARRAY = add_column("a", {"type": "array", "elementType": "short", "containsNull": True})
INVARIANT = add_column("i", "integer", {"delta.invariants": '{"expression":{"expression":"i > 0"}}'})
DV_ON = set_properties({"delta.enableDeletionVectors": "true"})
DV_FEATURE = add_features("deletionVectors", reader=True)
VARIANT = (add_column("v", "variant"), add_features("variantType", reader=True))
TYPED_DATE_DEFAULT = add_column("d2", "date", {"CURRENT_DEFAULT": "DATE '2024-01-01'"})
COLLATED = add_column("c", "string", {"__COLLATIONS": {"c": "spark.UTF8_LCASE"}})
SUSPENDED = set_properties({"delta.rowTrackingSuspended": "true"})
COL_ID_NAMES = col_id_physical_names()
# fmt: off
CASES: tuple[KernelCase, ...] = (
    # --- writer-v1: IcebergWriterCompatV1 + IcebergCompatV2 ---
    kcase("w1-compat-write", W1, "w1"),
    kcase("w1-cdf-on", W1, "w1", "cdf-on", "[changeDataFeed]", ("IWC1-NO-CHANGE-DATA-FEED",)),
    kcase("w1-cdf-supported-inactive", W1, "w1", "cdf-off"),
    kcase("w1-check-constraint", W1, "w1", "check", "[checkConstraints]", ("IWC1-NO-CHECK-CONSTRAINTS",)),
    kcase("w1-row-tracking-on", W1, "w1", "row-tracking-on", "[rowTracking]", ("IWC1-NO-ROW-TRACKING",)),
    kcase("w1-row-tracking-supported-inactive", W1, "w1", "row-tracking-off"),
    kcase("w1-tinyint-added-by-delta-spark", W1, "w1", "tinyint", "data types: [byte]",
          ("IWC1-NO-BYTE-SHORT", "IWC1-PHYSICAL-NAME")),
    kcase("w1-short-array-element", W1, "w1", refusal="data types: [short]", rules=("IWC1-NO-BYTE-SHORT",),
          edits=(SHORT_ARRAY,)),
    kcase("w1-uuid-physical-names", W1, "sql-w1-id", refusal=PHYSICAL, rules=("IWC1-PHYSICAL-NAME",)),
    kcase("w1-name-mode", W1, "sql-w1-name", refusal=NAME_MODE, rules=("IWC1-ID-MODE", "IWC1-PHYSICAL-NAME")),
    kcase("w1-generated-column", W1, "sql-w1-generated", refusal="[generatedColumns]",
          rules=("IWC1-NO-GENERATED-COLUMNS",), edits=(COL_ID_NAMES,)),
    kcase("w1-invariant", W1, "w1", refusal="[invariants]", rules=("IWC1-NO-INVARIANTS",),
          edits=(INVARIANT,)),
    kcase("w1-deletion-vectors", W1, "w1", refusal="[deletionVectors] are incompatible with icebergCompatV2",
          rules=("ICV2-NO-DELETION-VECTORS", "IWC1-FEATURE-ALLOWLIST"), edits=(DV_ON, DV_FEATURE)),
    kcase("w1-dv-property-only", W1, "w1", edits=(DV_ON,)),
    kcase("w1-checkpoint-protection", W1, "w1", edits=(add_features("checkpointProtection"),)),
    # --- writer-v3: IcebergWriterCompatV3 + IcebergCompatV3 ---
    kcase("w3-compat-write", W3, "w3"),
    kcase("w3-deletion-vectors", W3, "w3", "dv-on"),
    kcase("w3-cdf-on", W3, "w3", "cdf-on", "[changeDataFeed]", ("IWC1-NO-CHANGE-DATA-FEED",)),
    kcase("w3-tinyint-added-by-delta-spark", W3, "w3", "tinyint", "data types: [byte]",
          ("IWC1-NO-BYTE-SHORT", "IWC1-PHYSICAL-NAME")),
    kcase("w3-uuid-physical-names", W3, "sql-w3-id", refusal=PHYSICAL, rules=("IWC1-PHYSICAL-NAME",)),
    kcase("w3-name-mode", W3, "w3", refusal=NAME_MODE, rules=("IWC1-ID-MODE",),
          edits=(set_properties({"delta.columnMapping.mode": "name"}),)),
    kcase("w3-identity-column", W3, "sql-w3-identity", refusal="[identityColumns]",
          rules=("IWC1-NO-IDENTITY-COLUMNS",), edits=(COL_ID_NAMES,)),
    kcase("w3-variant", W3, "w3", edits=VARIANT),
    kcase("w3-typed-date-default", W3, "w3", refusal="requires the default value to be literal",
          rules=("ICV3-LITERAL-DEFAULTS",), edits=(TYPED_DATE_DEFAULT,)),
    kcase("w3-row-tracking-suspended", W3, "w3", edits=(SUSPENDED,)),
    kcase("w3-collation-metadata", W3, "w3", edits=(COLLATED,)),
)
# fmt: on

# Kernel accepts, we refuse (exact rule ids).
STRICTER: Mapping[str, Difference] = {
    "w1-dv-property-only": Difference(
        frozenset({"ICV2-NO-DELETION-VECTORS"}),
        "Kernel checks only the deletionVectors feature; delta-spark adds that feature at commit whenever "
        "delta.enableDeletionVectors=true, so the property alone already means deletion vectors",
    ),
    "w1-checkpoint-protection": Difference(
        frozenset({"IWC1-FEATURE-ALLOWLIST"}),
        "the IcebergWriterCompatV1 RFC's allow-list does not include checkpointProtection (nor "
        "catalogManaged, typeWidening-preview); Kernel's list does",
    ),
    "w3-row-tracking-suspended": Difference(
        frozenset({"ICV3-ROW-TRACKING-NOT-SUSPENDED"}),
        "Kernel checks only delta.enableRowTracking; with delta.rowTrackingSuspended=true row ids are not "
        "assigned, which IcebergCompatV3 relies on",
    ),
    "w3-collation-metadata": Difference(
        frozenset({"IWC1-NO-COLLATIONS"}),
        "Kernel blocks collations only through its feature allow-list; we also refuse __COLLATIONS column "
        "metadata (Iceberg has no collations)",
    ),
}

# Kernel refuses, we accept.
LOOSER: Mapping[str, Difference] = {}


@dataclass(frozen=True)
class Built:
    path: Path
    versions: Mapping[str, int]


def _alter_steps(spark: Any, path: Path, steps: tuple[tuple[str, str], ...]) -> dict[str, int]:
    versions = {CREATED: read_snapshot(path, io=io_for(path)).version}
    for label, alter in steps:
        sql(spark, f"ALTER TABLE delta.`{path}` {alter}")
        versions[label] = read_snapshot(path, io=io_for(path)).version
    return versions


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, Built]:
    """Every table the cases read, built once: two compat_write tables with their ALTER histories and
    the delta-spark SQL tables (no rows)."""
    base = tmp_path_factory.mktemp("kernel_oracle")
    bridge.activate_writer_features(spark)  # delta-spark must know the writer-compat properties
    out: dict[str, Built] = {}

    w1 = base / "w1"
    df1 = spark.sql(
        "select cast(id as int) id, named_struct('a', cast(id as int), 'b', 'x') s, "
        "array(cast(id as int)) arr, map('k', named_struct('x', id)) m, 'p1' p from range(2)"
    )
    compat_write(df1, str(w1), profile=W1, partition_by=["p"])
    out["w1"] = Built(w1, _alter_steps(spark, w1, W1_STEPS))

    w3 = base / "w3"
    df3 = spark.sql(
        "select cast(id as int) id, array(map('a', cast(id as int))) am, array(named_struct('q', id)) st, "
        "date'2024-01-02' d from range(2)"
    ).withColumn("d", F.col("d").alias("d", metadata={"CURRENT_DEFAULT": "'2024-01-01'"}))
    compat_write(df3, str(w3), profile=W3)
    out["w3"] = Built(w3, _alter_steps(spark, w3, W3_STEPS))

    for name, (columns, props) in SQL_TABLES.items():
        path = base / name
        shutil.rmtree(path, ignore_errors=True)
        sql(spark, f"CREATE TABLE delta.`{path}` ({columns}) USING delta TBLPROPERTIES ({props})")
        out[name] = Built(path, {CREATED: 0})
    return out


@pytest.fixture(scope="module")
def kernel(spark: Any) -> Kernel:
    return Kernel(spark)


def expected_ours(c: KernelCase) -> frozenset[str]:
    if c.id in STRICTER:
        return STRICTER[c.id].rules
    if c.id in LOOSER:
        return frozenset()
    return c.rules


@pytest.mark.spark
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_kernel_and_we_agree(tables: Mapping[str, Built], kernel: Kernel, c: KernelCase) -> None:
    built = tables[c.table]
    snap = read_snapshot(built.path, built.versions[c.state], io=io_for(built.path))
    metadata, protocol = apply_edits((snap.metadata, snap.protocol), c.edits)

    got = kernel.verdict(c.profile, kernel.metadata(metadata), kernel.protocol(protocol))
    if not c.edits:
        from_kernel_reader = kernel.verdict(c.profile, *kernel.load(built.path, snap.version))
        assert from_kernel_reader == got, "Kernel's own reading of the table judges it differently"

    if c.refusal is None:
        assert got.kind == "accept", got
    else:
        assert got.kind == "refuse" and c.refusal in got.detail, got
    ours = state_rules(c.profile, metadata, protocol)
    assert ours == expected_ours(c), f"validate: {sorted(ours)}"


def test_difference_tables_are_consistent() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    by_id = {c.id: c for c in CASES}
    assert set(STRICTER) <= {c.id for c in CASES if c.refusal is None}
    assert set(LOOSER) <= {c.id for c in CASES if c.refusal is not None}
    for c in CASES:
        assert c.table in {"w1", "w3", *SQL_TABLES}, c.id
        assert c.state == CREATED or c.state in dict(W1_STEPS if c.table == "w1" else W3_STEPS), c.id
        assert c.rules <= set(get_profile(c.profile).rule_ids), c.id
        if c.refusal is None:
            assert not c.rules, f"{c.id}: an accepted case lists our rules only in STRICTER"
        else:
            assert bool(c.rules) != (c.id in LOOSER), f"{c.id}: refusals need rules, or a LOOSER entry"
    for table in (STRICTER, LOOSER):
        for cid, d in table.items():
            assert d.reason and d.rules <= set(get_profile(by_id[cid].profile).rule_ids), cid


def test_differences_are_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text
    section = text.split(SECTION, 1)[1]
    for d in (*STRICTER.values(), *LOOSER.values()):
        for rule in d.rules:
            assert f"`{rule}`" in section, rule
