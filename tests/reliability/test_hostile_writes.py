"""Generated hostile writes: every one commits a compliant table or is refused with the table untouched.

Hypothesis generates schemas (every Spark type the writer may meet, byte/short, decimals, binary,
dates and both timestamp kinds, void, variant, empty structs, arrays and maps of structs, deep
nesting), column names (dots, spaces, backticks, commas, semicolons, braces, unicode, case
collisions), rows, table properties and partition specs. Each case is written through
``compat_write`` for one profile, either to a fresh location or as a second write (append or
overwrite with ``mergeSchema``) onto a copy of an existing compliant table. Exactly one of two
outcomes is accepted:

- the write commits, ``check_table`` finds nothing against the profile, and the rows read back equal
  what was written (chispa);
- the write raises an :class:`~icecompat_writer.errors.IcecompatError` whose text carries no Java
  stack or Python traceback (a :class:`CompatViolation` names a rule and a fix for every problem),
  and the table directory (listing, sizes, bytes) is exactly what it was.

The CI variant runs a few cases per profile and scenario; ``--soak`` runs many more. Every outcome
is tallied (``compliant`` or the refusing rule ids / exception type) and printed at the end of the
module; set ``ICECOMPAT_HOSTILE_TALLY=<file>`` to have the tally written as JSON, and
``ICECOMPAT_HOSTILE_VERBOSE=1`` to print every case with its outcome.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation, IcecompatError
from icecompat_writer.schema import parse_schema
from icecompat_writer.writing.api import compat_write

PROFILES = ["v3", "writer-v1", "writer-v3"]
ROW = "_hx_row"  # every generated DataFrame starts with this long column: rows are matched by it

# --- what a refusal may and may not look like ------------------------------------------------------

_RAW_ERROR = re.compile(
    r"Traceback \(most recent call last\)|Py4JJavaError|py4j\.protocol|^\s+at [\w$.]+\(.*\)$|"
    r"\n\s*at (?:org|java|scala|io)\.[\w$.]+",
    re.MULTILINE,
)


def assert_clean_refusal(err: BaseException) -> str:
    """The refusal is one of the package's errors and reads as a message, not as a stack dump.

    Returns the tally key of the outcome: the rule ids of a CompatViolation, else the exception type
    (and Java class for a JvmError).
    """
    assert isinstance(err, IcecompatError), f"not an IcecompatError: {type(err).__name__}: {err}"
    text = str(err)
    assert text.strip(), "an empty error message"
    assert not _RAW_ERROR.search(text), f"raw stack in the message of {type(err).__name__}:\n{text}"
    if isinstance(err, CompatViolation):
        assert err.violations, "a CompatViolation without violations"
        for v in err.violations:
            assert v.rule and v.fix, f"violation without rule or fix: {v}"
            assert v.rule in text
        return "refused " + ",".join(err.rules)
    java = getattr(err, "java_class", "")
    return f"error {type(err).__name__}" + (f" ({java.rsplit('.', 1)[-1]})" if java else "")


def snapshot_dir(root: Path) -> dict[str, tuple[Any, ...]]:
    """Everything below ``root``: directories, and files with size and bytes (absent root: empty)."""
    if not root.exists():
        return {}
    out: dict[str, tuple[Any, ...]] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir",)
        else:
            out[rel] = ("file", p.stat().st_size, p.read_bytes())
    return out


def assert_unchanged(before: dict[str, tuple[Any, ...]], root: Path, err: BaseException) -> None:
    after = snapshot_dir(root)
    if after != before:
        added = sorted(set(after) - set(before))
        gone = sorted(set(before) - set(after))
        changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
        raise AssertionError(
            f"refused write ({type(err).__name__}: {str(err)[:300]}) changed the table directory: "
            f"added {added}, removed {gone}, changed {changed}"
        )


# --- generated schemas -----------------------------------------------------------------------------

# Characters that break naive quoting, path building, str.format, SQL and JSON handling.
NAME_ALPHABET = "abAB_.` ,;:={}()[]'\"\\/%$#-\tüßÅé名字ø😀"
names = st.text(alphabet=NAME_ALPHABET, min_size=1, max_size=6).filter(lambda n: n.lower() != ROW)


@dataclass(frozen=True)
class Column:
    """A generated field: its name, Spark type and a strategy for its values."""

    name: str
    dtype: T.DataType
    values: st.SearchStrategy[Any]
    variant: bool = False  # written as a JSON string, turned into VARIANT with parse_json


def _decimals() -> st.SearchStrategy[tuple[T.DataType, st.SearchStrategy[Any]]]:
    def build(ps: tuple[int, int]) -> tuple[T.DataType, st.SearchStrategy[Any]]:
        p, s = ps
        bound = 10**p - 1
        values = st.integers(-bound, bound).map(lambda n: Decimal(n).scaleb(-s))
        return T.DecimalType(p, s), values

    return st.integers(1, 38).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p))).map(build)


_TS_MIN = dt.datetime(1900, 1, 1)
_TS_MAX = dt.datetime(2200, 1, 1)

PRIMITIVES: list[tuple[T.DataType, st.SearchStrategy[Any]]] = [
    (T.IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (T.LongType(), st.integers(-(2**63), 2**63 - 1)),
    (T.FloatType(), st.floats(width=32)),
    (T.DoubleType(), st.floats()),
    (T.StringType(), st.text(max_size=8)),
    (T.BinaryType(), st.binary(max_size=8).map(bytearray)),
    (T.BooleanType(), st.booleans()),
    (T.DateType(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (T.TimestampType(), st.datetimes(_TS_MIN, _TS_MAX)),
    (T.TimestampNTZType(), st.datetimes(_TS_MIN, _TS_MAX)),
]
# byte and short: every writer profile refuses them, so they are drawn less often than the rest
NARROW: list[tuple[T.DataType, st.SearchStrategy[Any]]] = [
    (T.ByteType(), st.integers(-128, 127)),
    (T.ShortType(), st.integers(-(2**15), 2**15 - 1)),
]
VOID: tuple[T.DataType, st.SearchStrategy[Any]] = (T.NullType(), st.none())
# Map keys: hashable, never null, no NaN.
KEY_PRIMITIVES: list[tuple[T.DataType, st.SearchStrategy[Any]]] = [
    (T.IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (T.LongType(), st.integers(-(2**63), 2**63 - 1)),
    (T.StringType(), st.text(max_size=6)),
    (T.DateType(), st.dates()),
    (T.BooleanType(), st.booleans()),
]

TypeAndValues = tuple[T.DataType, st.SearchStrategy[Any]]


def _nullable(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values)


def _struct_of(cols: list[tuple[str, TypeAndValues]]) -> TypeAndValues:
    dtype = T.StructType([T.StructField(n, t, True) for n, (t, _) in cols])
    values = st.tuples(*[_nullable(v) for _, (_, v) in cols]) if cols else st.just(())
    return dtype, values


def _array_of(inner: TypeAndValues) -> TypeAndValues:
    t, v = inner
    return T.ArrayType(t, True), st.lists(_nullable(v), max_size=3)


def _map_of(key: TypeAndValues, value: TypeAndValues) -> TypeAndValues:
    kt, kv = key
    vt, vv = value
    return T.MapType(kt, vt, True), st.dictionaries(kv, _nullable(vv), max_size=3)


def _extend(children: st.SearchStrategy[TypeAndValues]) -> st.SearchStrategy[TypeAndValues]:
    # an empty struct now and then (Delta refuses to write them); otherwise 1-3 fields
    fields = st.integers(0, 15).flatmap(
        lambda i: st.just([]) if i == 15 else st.lists(st.tuples(names, children), min_size=1, max_size=3)
    )
    return st.one_of(
        fields.map(_struct_of),
        children.map(_array_of),
        st.tuples(st.sampled_from(KEY_PRIMITIVES), children).map(lambda kv: _map_of(*kv)),
    )


def _primitive(i: int) -> st.SearchStrategy[TypeAndValues]:
    # void is rare per leaf, or most nested schemas would hold one; the simplest draw is a plain type
    if i == 39:
        return st.just(VOID)
    if i >= 36:
        return st.sampled_from(NARROW)
    if i >= 33:
        return _decimals()
    return st.sampled_from(PRIMITIVES)


primitive_types = st.integers(0, 39).flatmap(_primitive)
any_type: st.SearchStrategy[TypeAndValues] = st.recursive(primitive_types, _extend, max_leaves=6)


@st.composite
def deep_type(draw: st.DrawFn) -> TypeAndValues:
    """One leaf nested 4-12 levels deep through structs, arrays and maps."""
    t = draw(primitive_types)
    for _ in range(draw(st.integers(4, 12))):
        kind = draw(st.sampled_from(["struct", "array", "map"]))
        if kind == "struct":
            t = _struct_of([(draw(names), t)])
        elif kind == "array":
            t = _array_of(t)
        else:
            t = _map_of(draw(st.sampled_from(KEY_PRIMITIVES)), t)
    return t


json_texts = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=5)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=5,
).map(json.dumps)


@st.composite
def columns(draw: st.DrawFn, taken: tuple[str, ...] = ()) -> list[Column]:
    """1-4 top-level columns; sometimes a deep one, a variant, a case twin or an exact duplicate."""
    out: list[Column] = []
    for _ in range(draw(st.integers(1, 4))):
        roll = draw(st.integers(0, 15))
        name = draw(names)
        if roll == 15 and out:  # a case collision with an earlier column (or an exact duplicate)
            twin = draw(st.sampled_from(out)).name
            name = draw(st.sampled_from([twin.swapcase(), twin.upper(), twin]))
        elif roll in (13, 14) and taken:  # reuse a column of the existing table, perhaps in another case
            base = draw(st.sampled_from(taken))
            name = draw(st.sampled_from([base, base.upper()]))
        if roll == 12:
            out.append(Column(name, T.StringType(), json_texts, variant=True))
            continue
        dtype, values = draw(deep_type() if roll == 11 else any_type)
        out.append(Column(name, dtype, values))
    return out


@dataclass
class Case:
    """One generated write: columns, rows, properties, partitioning and (second writes) the mode."""

    columns: list[Column]
    rows: list[tuple[Any, ...]]
    properties: dict[str, str] = field(default_factory=dict)
    partition_by: list[str] | None = None
    mode: str = "errorifexists"
    options: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        cols = ", ".join(
            f"{c.name!r}: {'variant' if c.variant else c.dtype.simpleString()}" for c in self.columns
        )
        return (
            f"columns [{cols}], {len(self.rows)} row(s), properties {self.properties}, "
            f"partition_by {self.partition_by}, mode {self.mode}, options {self.options}"
        )


# Table properties: the ones that matter to the profiles (sane and garbage values) and free-form ones.
_PROPERTY_VALUES = st.sampled_from(["true", "false", "TRUE", " true ", "", "garbage", "-1", "0", "5", "{0}"])
_KNOWN_PROPERTIES = [
    "delta.enableDeletionVectors",
    "delta.columnMapping.mode",
    "delta.enableChangeDataFeed",
    "delta.appendOnly",
    "delta.checkpointInterval",
    "delta.enableRowTracking",
    "delta.enableIcebergCompatV2",
    "delta.enableIcebergCompatV3",
    "delta.enableIcebergWriterCompatV1",
    "delta.enableIcebergWriterCompatV3",
    "delta.universalFormat.enabledFormats",
    "delta.enableTypeWidening",
    "delta.dataSkippingNumIndexedCols",
    "delta.randomizeFilePrefixes",
    "delta.feature.deletionVectors",
    "delta.minReaderVersion",
    "delta.checkpointPolicy",
]
properties_any = st.dictionaries(
    st.one_of(
        st.sampled_from(_KNOWN_PROPERTIES),
        st.text(alphabet="abcxyz._-{}` ;ü", min_size=1, max_size=10),
    ),
    st.one_of(
        _PROPERTY_VALUES,
        st.sampled_from(["none", "name", "id", "iceberg", "iceberg,hudi", "v2", "classic"]),
        st.text(max_size=8),
    ),
    max_size=3,
)
properties = st.integers(0, 2).flatmap(lambda i: properties_any if i == 2 else st.just({}))


@st.composite
def rows_for(draw: st.DrawFn, cols: list[Column], start: int) -> list[tuple[Any, ...]]:
    n = draw(st.integers(0, 3))
    return [(start + i, *[draw(_nullable(c.values)) for c in cols]) for i in range(n)]


@st.composite
def partition_specs(draw: st.DrawFn, cols: list[Column]) -> list[str] | None:
    if draw(st.integers(0, 4)) < 4:
        return None
    candidates = [c.name for c in cols] + [ROW]
    spec = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2))
    if draw(st.integers(0, 4)) == 4:
        spec.append(draw(names))  # a column that (most likely) does not exist
    return spec


@st.composite
def fresh_cases(draw: st.DrawFn) -> Case:
    cols = draw(columns())
    return Case(cols, draw(rows_for(cols, 1000)), draw(properties), draw(partition_specs(cols)))


# The existing table second writes go to (one copy per case): compliant, three rows, nested columns.
BASE_SQL = (
    "select id as _hx_row, cast(id as int) as a, named_struct('x', cast(id as string), 'y', array(id)) as s, "
    "map('k', id) as m from range(3)"
)
BASE_COLUMNS = ("a", "s", "m")


@st.composite
def second_cases(draw: st.DrawFn) -> Case:
    cols = draw(columns(taken=BASE_COLUMNS))
    mode = draw(st.sampled_from(["append", "overwrite"]))
    spec = None if draw(st.integers(0, 3)) < 3 else draw(st.sampled_from([[], ["a"], [ROW]]))
    return Case(
        cols,
        draw(rows_for(cols, 1000)),
        draw(properties),
        spec,
        mode,
        {"mergeSchema": "true"},
    )


# --- running one case ------------------------------------------------------------------------------


def dataframe(spark: SparkSession, case: Case) -> DataFrame:
    """The case's rows as a DataFrame; variant columns are parsed from their JSON text.

    The rows are created under positional names and renamed by a select, so names that collide (in
    case, or exactly) reach the writer as generated.
    """
    positional = T.StructType(
        [
            T.StructField("c0", T.LongType(), False),
            *[T.StructField(f"c{i + 1}", c.dtype, True) for i, c in enumerate(case.columns)],
        ]
    )
    df = spark.createDataFrame(case.rows, positional)
    return df.select(
        F.col("c0").alias(ROW),
        *[
            (F.parse_json(F.col(f"c{i + 1}")) if c.variant else F.col(f"c{i + 1}")).alias(c.name)
            for i, c in enumerate(case.columns)
        ],
    )


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def comparable(df: DataFrame) -> DataFrame:
    """Variant values compare as their JSON text (VariantVal has no equality)."""
    return df.select(
        *[
            (
                F.to_json(F.col(_q(f.name))) if isinstance(f.dataType, T.VariantType) else F.col(_q(f.name))
            ).alias(f.name)
            for f in df.schema.fields
        ]
    )


def conform(col: SparkColumn, have: T.DataType, want: T.DataType) -> SparkColumn:
    """``col`` (of type ``have``) as the table stores it (type ``want``).

    Struct fields are matched by name as Delta matches them (exactly, else case-folded); fields the
    written struct lacks are null, and a null struct stays null. Arrays and map values conform
    element by element; anything else is a cast.
    """
    if have == want:
        return col
    if isinstance(have, T.StructType) and isinstance(want, T.StructType):
        exact = {f.name: f for f in have.fields}
        folded = {f.name.lower(): f for f in have.fields}
        parts = []
        for w in want.fields:
            h = exact.get(w.name) or folded.get(w.name.lower())
            value = (
                F.lit(None).cast(w.dataType)
                if h is None
                else conform(col.getField(h.name), h.dataType, w.dataType)
            )
            parts.append(value.alias(w.name))
        return F.when(col.isNull(), F.lit(None).cast(want)).otherwise(F.struct(*parts))
    if isinstance(have, T.ArrayType) and isinstance(want, T.ArrayType):
        return F.transform(col, lambda e: conform(e, have.elementType, want.elementType))
    if isinstance(have, T.MapType) and isinstance(want, T.MapType) and have.keyType == want.keyType:
        return F.transform_values(col, lambda _k, v: conform(v, have.valueType, want.valueType))
    return col.cast(want)


def assert_rows_landed(spark: SparkSession, root: Path, df: DataFrame) -> None:
    """The rows of ``df`` (matched by ``_hx_row``) read back equal, column by column."""
    back = spark.read.format("delta").load(str(root)).filter(F.col(ROW) >= 1000)
    exact = {f.name: f for f in back.schema.fields}
    folded = {f.name.lower(): f for f in back.schema.fields}  # Delta: toLowerCase(Locale.ROOT)
    picked = []
    for f in df.schema.fields:
        target = exact.get(f.name) or folded[f.name.lower()]
        picked.append(F.col(_q(target.name)).alias(f.name))
    got = back.select(*picked)
    want = df
    if [f.dataType for f in got.schema.fields] != [f.dataType for f in df.schema.fields]:
        # a second write into an existing column: Delta casts to the table's type and, under
        # mergeSchema, widens structs with the table's other fields (null in the new rows)
        want = df.select(
            *[
                conform(F.col(_q(w.name)), w.dataType, g.dataType).alias(w.name)
                for w, g in zip(df.schema.fields, got.schema.fields, strict=True)
            ]
        )
    assert_df_equality(
        comparable(got).orderBy(ROW),
        comparable(want).orderBy(ROW),
        ignore_nullable=True,
        allow_nan_equality=True,
    )


TALLY: dict[str, Counter[str]] = {}


def record(key: str, outcome: str, detail: str = "") -> None:
    if os.environ.get("ICECOMPAT_HOSTILE_VERBOSE"):
        print("CASE", key, outcome, detail[:700].replace("\n", " | "))
    TALLY.setdefault(key, Counter())[outcome] += 1


def run_case(spark: SparkSession, root: Path, case: Case, profile: str, tally_key: str) -> bool:
    """Write one case and assert that its outcome is one of the two acceptable ones (True: committed)."""
    df = dataframe(spark, case)
    before = snapshot_dir(root)
    try:
        result = compat_write(
            df,
            str(root),
            mode=case.mode,
            profile=profile,
            properties=case.properties,
            partition_by=case.partition_by,
            options=case.options,
        )
    except BaseException as err:  # every exception is judged here
        if isinstance(err, KeyboardInterrupt):
            raise
        try:
            outcome = assert_clean_refusal(err)
            assert_unchanged(before, root, err)
        except AssertionError as failure:
            raise AssertionError(f"{failure}\ncase: {case.describe()}") from err
        record(tally_key, outcome, f"{str(err)[:400]} <== {case.describe()}")
        return False
    assert result.version is not None, f"nothing written: {result}\ncase: {case.describe()}"
    report = check_table(root, profile)
    assert report.violations == () and report.errors == (), (
        f"committed a non-compliant table:\n{report.render_text()}\ncase: {case.describe()}"
    )
    try:
        assert_rows_landed(spark, root, df)
    except AssertionError as failure:
        raise AssertionError(f"{failure}\ncase: {case.describe()}") from None
    record(tally_key, "compliant", case.describe())
    return True


# --- the tests -------------------------------------------------------------------------------------

CI_EXAMPLES = {"fresh": 18, "second": 10}
SOAK_EXAMPLES = {"fresh": 150, "second": 80}
_COMMON = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
    "database": None,
}


@pytest.fixture(scope="module")
def tally() -> Iterator[dict[str, Counter[str]]]:
    """Prints (and, with ICECOMPAT_HOSTILE_TALLY, writes) the outcomes of every case of the module."""
    started = time.monotonic()
    yield TALLY
    summary = {
        key: {"cases": sum(c.values()), "outcomes": dict(c.most_common())} for key, c in sorted(TALLY.items())
    }
    summary["seconds"] = round(time.monotonic() - started)  # type: ignore[assignment]
    print("\nhostile write outcomes:\n" + json.dumps(summary, indent=2))
    target = os.environ.get("ICECOMPAT_HOSTILE_TALLY")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2) + "\n")


@pytest.fixture(scope="module")
def base_tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One compliant table per profile; second writes go to a fresh copy of it."""
    out: dict[str, Path] = {}
    for profile in PROFILES:
        root = tmp_path_factory.mktemp("hostile-base") / profile
        compat_write(spark.sql(BASE_SQL), str(root), profile=profile)
        assert check_table(root, profile).compliant
        out[profile] = root
    return out


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="hostile-")) / "table"


def run_fresh(spark: SparkSession, profile: str, case: Case) -> None:
    root = _scratch()
    try:
        run_case(spark, root, case, profile, f"{profile} fresh")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def run_second(spark: SparkSession, base: Path, profile: str, case: Case) -> None:
    root = _scratch()
    shutil.copytree(base, root, symlinks=True)
    try:
        if run_case(spark, root, case, profile, f"{profile} second write"):
            kept = spark.read.format("delta").load(str(root)).filter(F.col(ROW) < 1000).count()
            assert kept == (0 if case.mode == "overwrite" else 3), f"base rows after {case.mode}: {kept}"
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def _fresh_test(spark: SparkSession, profile: str, examples: int) -> None:
    @settings(max_examples=examples, **_COMMON)
    @given(case=fresh_cases())
    def check(case: Case) -> None:
        run_fresh(spark, profile, case)

    check()


def _second_test(spark: SparkSession, base: Path, profile: str, examples: int) -> None:
    @settings(max_examples=examples, **_COMMON)
    @given(case=second_cases())
    def check(case: Case) -> None:
        run_second(spark, base, profile, case)

    check()


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_generated_fresh_writes_are_compliant_or_refused(
    spark: SparkSession, profile: str, tally: dict[str, Counter[str]]
) -> None:
    _fresh_test(spark, profile, CI_EXAMPLES["fresh"])


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_generated_second_writes_are_compliant_or_refused(
    spark: SparkSession, base_tables: dict[str, Path], profile: str, tally: dict[str, Counter[str]]
) -> None:
    _second_test(spark, base_tables[profile], profile, CI_EXAMPLES["second"])


@pytest.mark.spark
@pytest.mark.soak
@pytest.mark.parametrize("profile", PROFILES)
def test_soak_generated_fresh_writes(
    spark: SparkSession, profile: str, tally: dict[str, Counter[str]]
) -> None:
    _fresh_test(spark, profile, SOAK_EXAMPLES["fresh"])


@pytest.mark.spark
@pytest.mark.soak
@pytest.mark.parametrize("profile", PROFILES)
def test_soak_generated_second_writes(
    spark: SparkSession, base_tables: dict[str, Path], profile: str, tally: dict[str, Counter[str]]
) -> None:
    _second_test(spark, base_tables[profile], profile, SOAK_EXAMPLES["second"])


# --- single inputs the generator found ------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    "column",
    [
        "array(array(cast(id as tinyint)))",
        "named_struct('a', id)",
        "map('k', id)",
        "cast(null as void)",
        "parse_json('{}')",
    ],
    ids=["array", "struct", "map", "void", "variant"],
)
def test_a_partition_column_delta_cannot_partition_by_is_refused_before_any_file(
    spark: SparkSession, table_path: Path, column: str
) -> None:
    """Found as: v3, columns {'-': array<array<tinyint>>, ...}, partition_by ['-']: delta-spark refused at
    commit, after the data files were written, and the directories they were written to stayed."""
    df = spark.sql(f"select id, {column} as `-` from range(2)")
    with pytest.raises(CompatViolation) as err:
        compat_write(df, str(table_path), partition_by=["-"])
    assert [(v.rule, v.path) for v in err.value.violations] == [("DELTA-WRITE-PARTITION-COLUMN", "-")]
    assert not table_path.exists()


@pytest.mark.spark
@pytest.mark.parametrize(
    ("select", "rule", "path"),
    [
        ("id, id as ID", "DELTA-WRITE-DUPLICATE-COLUMN", "ID"),
        ("id, named_struct('a', 1, 'A', 2) as s", "DELTA-WRITE-DUPLICATE-COLUMN", "s.A"),
        ("id, named_struct() as s", "DELTA-WRITE-EMPTY-STRUCT", "s"),
        ("id, array(named_struct()) as s", "DELTA-WRITE-EMPTY-STRUCT", "s.element"),
    ],
    ids=["duplicate", "nested-duplicate", "empty-struct", "empty-element"],
)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "append"])
def test_names_delta_merges_and_empty_structs_are_refused_with_a_rule(
    spark: SparkSession, table_path: Path, select: str, rule: str, path: str, existing: bool
) -> None:
    """Found as the largest share of soak outcomes: delta-spark's own DELTA_DUPLICATE_COLUMNS_FOUND and
    DELTA_CANNOT_WRITE_EMPTY_SCHEMA (no rule, no fix), and for an empty struct in an array of a
    mergeSchema append, Parquet's "Cannot write a schema with an empty group" from the tasks."""
    if existing:
        compat_write(spark.range(2), str(table_path))
    before = snapshot_dir(table_path) if existing else None
    with pytest.raises(CompatViolation) as err:
        compat_write(
            spark.sql(f"select {select} from range(2)"),
            str(table_path),
            mode="append" if existing else "errorifexists",
            options={"mergeSchema": "true"},
        )
    assert [(v.rule, v.path) for v in err.value.violations] == [(rule, path)]
    if existing:
        assert snapshot_dir(table_path) == before
    else:
        assert not table_path.exists()


@pytest.mark.spark
def test_a_write_refused_after_its_files_leaves_no_directory_behind(
    spark: SparkSession, table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting a refused write's files must take the directories they were written to along."""
    from icecompat_writer.errors import JvmError
    from icecompat_writer.jvm import bridge

    def refuse(self: Any, operation: Any = None) -> int:
        raise JvmError("refused at commit (test)", "org.example.Refused")

    df = spark.sql("select id, cast(id % 3 as int) as p from range(9)")
    monkeypatch.setattr(bridge.PendingWrite, "commit", refuse)
    with pytest.raises(JvmError):
        compat_write(df, str(table_path / "nested" / "deeper"), partition_by=["p"])
    assert not table_path.exists(), sorted(str(p) for p in table_path.rglob("*"))

    monkeypatch.undo()
    compat_write(df, str(table_path), partition_by=["p"])
    before = snapshot_dir(table_path)
    monkeypatch.setattr(bridge.PendingWrite, "commit", refuse)
    with pytest.raises(JvmError):
        compat_write(df, str(table_path), mode="append")
    assert snapshot_dir(table_path) == before


def _field(name: str, dtype: str = "integer") -> dict[str, Any]:
    return {"name": name, "type": dtype, "nullable": True, "metadata": {}}


@pytest.mark.parametrize(
    ("table_name", "written", "same"),
    [("ß", "SS", False), ("İ", "i", False), ("ǅ", "ǆ", True), ("Straße", "STRASSE", False), ("A", "a", True)],
)
def test_column_names_match_as_delta_matches_them(table_name: str, written: str, same: bool) -> None:
    """Found as: columns 'ß' and 'SS' in one write. Delta compares names by ``toLowerCase(Locale.ROOT)``;
    ``casefold`` made 'SS' the column 'ß', so an append refused a type mismatch that Delta does not see
    (or sent the data to the other column) and a partition by 'SS' partitioned by 'ß'."""
    from icecompat_writer.deltalog.actions import Metadata, TableState
    from icecompat_writer.planning import plan
    from icecompat_writer.writing.compose import WriteIntent, compose_metadata

    table = plan(
        "v3",
        Metadata(schema_string="{}").with_schema(
            parse_schema({"type": "struct", "fields": [_field(table_name)]})
        ),
    )
    data = {"type": "struct", "fields": [_field(written, "string")]}
    if same:
        with pytest.raises(CompatViolation) as err:
            compose_metadata(WriteIntent("append", parse_schema(data), merge_schema=True), table.metadata)
        assert err.value.rules == ["DELTA-WRITE-TYPE-MISMATCH"]
        return
    merged = compose_metadata(WriteIntent("append", parse_schema(data), merge_schema=True), table.metadata)
    assert [f["name"] for f in merged.schema["fields"]] == [table_name, written]
    planned = plan("v3", merged, None, TableState(table.protocol, table.metadata, 0))
    ids = [f["metadata"]["delta.columnMapping.id"] for f in planned.metadata.schema["fields"]]
    assert len(set(ids)) == 2
    with pytest.raises(CompatViolation) as err:
        compose_metadata(
            WriteIntent(
                "errorifexists",
                parse_schema({"type": "struct", "fields": [_field(table_name)]}),
                partition_by=(written,),
            ),
            None,
        )
    assert err.value.rules == ["DELTA-WRITE-PARTITION-COLUMN"]


@pytest.mark.spark
def test_sharp_s_and_double_s_are_two_columns_as_in_delta(spark: SparkSession, table_path: Path) -> None:
    compat_write(spark.sql("select 1 as id, 7 as `ß`"), str(table_path))
    more = spark.sql("select 2 as id, 'x' as `SS`")
    compat_write(more, str(table_path), mode="append", options={"mergeSchema": "true"})
    back = spark.read.format("delta").load(str(table_path))
    assert back.columns == ["id", "ß", "SS"]
    assert sorted(tuple(r) for r in back.collect()) == [(1, 7, None), (2, None, "x")]
    assert check_table(table_path).compliant


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_merge_schema_can_add_a_timestamp_ntz_column(
    spark: SparkSession, table_path: Path, profile: str
) -> None:
    compat_write(spark.range(2), str(table_path), profile=profile)
    more = spark.sql("select 5L as id, timestamp_ntz'2020-01-01 00:00:00' as t")
    result = compat_write(
        more, str(table_path), mode="append", profile=profile, options={"mergeSchema": "true"}
    )
    assert result.version == 1
    assert check_table(table_path, profile).compliant


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("rows", [[], [(1000, (7,)), (1001, None)]], ids=["no-rows", "rows"])
def test_merge_schema_into_a_wider_existing_struct(
    spark: SparkSession, base_tables: dict[str, Path], profile: str, rows: list[tuple[Any, ...]]
) -> None:
    """A struct written with a subset of the table's fields (and a new one) widens the table's struct;
    the written rows read back with the missing fields null (the soak found the oracle could not say so)."""
    narrow = T.StructType([T.StructField(":", T.IntegerType(), True)])
    case = Case([Column("s", narrow, st.none())], rows, mode="append", options={"mergeSchema": "true"})
    root = _scratch()
    shutil.copytree(base_tables[profile], root, symlinks=True)
    try:
        assert run_case(spark, root, case, profile, f"{profile} pinned")
        merged = spark.read.format("delta").load(str(root)).schema["s"].dataType
        assert [f.name for f in merged.fields] == ["x", "y", ":"]
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v3"])
def test_variant_under_iceberg_compat_v3_is_refused_before_any_file(
    spark: SparkSession, table_path: Path, profile: str
) -> None:
    """delta-spark 4.4 cannot write a variant column with IcebergCompatV3 (INVALID_FIELD_NAME on the
    physical name, after its tasks started): found as every soak case with a variant under v3 and
    writer-v3. Refused with a rule and every variant path, before any file."""
    df = spark.sql(
        """select id, parse_json('{"a": 1}') as v, array(named_struct('w', parse_json('2'))) as a """
        "from range(2)"
    )
    with pytest.raises(CompatViolation) as err:
        compat_write(df, str(table_path), profile=profile)
    assert {(v.rule, v.path) for v in err.value.violations} == {
        ("DELTA-WRITE-VARIANT-ICEBERG-V3", "v"),
        ("DELTA-WRITE-VARIANT-ICEBERG-V3", "a.element.w"),
    }
    assert "to_json" in err.value.violations[0].fix
    assert not table_path.exists()


@pytest.mark.spark
@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("delta.enableDeletionVectors", "id", "true or false"),
        ("delta.appendOnly", " true ", "true or false"),
        ("delta.feature.deletionVectors", "true", "supported or enabled"),
        ("delta.minReaderVersion", " 3", "one of 1, 2, 3"),
    ],
)
def test_property_values_delta_cannot_parse_are_refused_before_any_file(
    spark: SparkSession, table_path: Path, key: str, value: str, expected: str
) -> None:
    """Found by the soak as delta-spark's own IllegalArgumentException ("For input string") and
    DELTA_UNSUPPORTED_FEATURE_STATUS, raised after planning; values it accepts still pass."""
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(2), str(table_path), profile="writer-v3", properties={key: value})
    assert [(v.rule, v.observed, v.expected) for v in err.value.violations] == [
        ("DELTA-WRITE-PROPERTY-VALUE", value, expected)
    ]
    assert key in err.value.violations[0].message
    assert not table_path.exists()


@pytest.mark.spark
def test_property_values_delta_accepts_are_written(spark: SparkSession, table_path: Path) -> None:
    props = {"delta.enableDeletionVectors": "TRUE", "delta.feature.deletionVectors": "Enabled"}
    compat_write(spark.range(2), str(table_path), profile="writer-v3", properties=props)
    assert check_table(table_path, "writer-v3").compliant
