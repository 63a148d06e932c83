"""Hostile names, paths and properties: no SQL injection, nothing read or written outside the table,
no table property that makes the plugin run code.

(a) The only SQL text the package builds is in ``writing/api.py`` (``DESCRIBE DETAIL`` and ``CREATE
TABLE ... LOCATION`` of a catalog target, and ``spark.catalog.tableExists``); a source scan keeps it
that way, and real writes with names holding backticks, ``; DROP TABLE``, SQL keywords and unicode
either land under exactly that name or are refused, while a victim table stays untouched.
(b) ``check_table`` and ``write_iceberg_metadata`` meet absolute paths elsewhere, ``..`` escapes,
``file:`` URIs to other directories and symbolic links leading out of the table: the checker reports
them, the emitter refuses, and inotify shows that a sentinel file outside was never opened.
(c) Table properties holding module and class names, ``__import__`` and format placeholders are
stored as text; properties that delta-spark would hand to Hadoop/Parquet/Spark (which load classes
they name) are refused before anything runs; column names that are ``str.format`` fields render
literally in every rule message.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.checking.check import check_table
from icecompat_writer.cli.main import main
from icecompat_writer.errors import CompatViolation, IcecompatError, SetupError
from icecompat_writer.iceberg import write_iceberg_metadata
from icecompat_writer.rules.catalog import CATALOG
from icecompat_writer.rules.kinds import KINDS
from icecompat_writer.rules.model import Finding
from icecompat_writer.rules.schema import quote_name
from icecompat_writer.writing.api import _register_table, compat_write
from icecompat_writer.writing.target import Target, TargetError, parse_target
from tests import support
from tests.checking.test_check import OpenWatch
from tests.cli.synthetic import build_table, stats
from tests.deltalog import logbuilder as lb

PACKAGE = Path(__file__).resolve().parents[2] / "icecompat_writer"
INJECTION = "x; DROP TABLE hx_victim; --"

# --- (a) SQL -------------------------------------------------------------------------------------


def _sql_calls() -> list[tuple[str, int, ast.Call]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"sql", "tableExists", "selectExpr", "expr"}
            ):
                out.append((str(path.relative_to(PACKAGE)), node.lineno, node))
    return out


def test_every_sql_text_the_package_builds_interpolates_only_quoted_identifiers() -> None:
    """Each SQL string is a literal or an f-string whose holes are ``<target>.sql_name`` (every part
    backtick-quoted) or the escaped location literal; anything new has to be added here knowingly."""
    allowed = {"target.sql_name", "escaped"}
    seen = []
    for where, line, call in _sql_calls():
        holes: list[str] = []
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                continue  # literal SQL: nothing from outside in it
            if isinstance(arg, ast.Attribute):
                holes.append(ast.unparse(arg))
                continue
            assert isinstance(arg, ast.JoinedStr), f"{where}:{line}: SQL built from {ast.unparse(arg)}"
            holes.extend(ast.unparse(v.value) for v in arg.values if isinstance(v, ast.FormattedValue))
        assert set(holes) <= allowed, f"{where}:{line}: unquoted value in SQL: {holes}"
        if holes:
            seen.append((where, call.func.attr, tuple(holes)))  # type: ignore[attr-defined]
    assert sorted(seen) == [
        ("fleet/run.py", "sql", ("target.sql_name",)),
        ("fleet/run.py", "sql", ("target.sql_name",)),
        ("notebook/writers.py", "sql", ("target.sql_name",)),
        ("notebook/writers.py", "tableExists", ("target.sql_name",)),
        ("upgrading/api.py", "sql", ("target.sql_name",)),
        ("writing/api.py", "sql", ("target.sql_name",)),
        ("writing/api.py", "sql", ("target.sql_name", "escaped")),
        ("writing/api.py", "tableExists", ("target.sql_name",)),
    ]


@pytest.mark.parametrize(
    "name",
    ["a`b", INJECTION, "select", "tëst", "`", "a.b", "--", "'; --"],
)
def test_sql_names_quote_every_part_and_double_backticks(name: str) -> None:
    quoted = Target(table=("default", name)).sql_name
    assert quoted == "`default`.`" + name.replace("`", "``") + "`"
    assert parse_target(quoted).table == ("default", name)  # reads back as exactly those parts


@pytest.mark.parametrize("text", ["", "   ", "default.`x`; --", "a..b", "`unclosed", "a.", "``"])
def test_a_malformed_target_is_refused_as_a_package_error(text: str) -> None:
    with pytest.raises(TargetError) as err:
        parse_target(text)
    assert isinstance(err.value, IcecompatError) and isinstance(err.value, ValueError)


@pytest.fixture(scope="module")
def victim(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A catalog table hostile names aim at; every test checks it is still exactly there."""
    if spark.catalog.tableExists("hx_victim"):
        spark.sql("DROP TABLE hx_victim")
    result = compat_write(spark.range(5), "hx_victim")
    yield Path(result.location)
    spark.sql("DROP TABLE IF EXISTS hx_victim")


def assert_victim_intact(spark: SparkSession, victim: Path, digest: dict[str, str]) -> None:
    assert spark.catalog.tableExists("hx_victim")
    assert sorted(r.id for r in spark.table("hx_victim").collect()) == [0, 1, 2, 3, 4]
    assert support.tree_digest(victim) == digest


@pytest.mark.spark
@pytest.mark.parametrize(
    "target",
    [INJECTION, f"`{INJECTION}`", "`hx``tick`", "hx_victim`; DROP TABLE hx_victim; --", "tëst", "`a b`"],
)
def test_hostile_table_names_are_refused_and_touch_nothing(
    spark: SparkSession, victim: Path, target: str
) -> None:
    digest = support.tree_digest(victim)
    tables = sorted(t.name for t in spark.catalog.listTables())
    with pytest.raises(IcecompatError) as err:
        compat_write(spark.range(2), target, mode="append")
    text = str(err.value)
    assert "letters, digits and _" in text or "not a table identifier" in text, text
    assert "Traceback" not in text and "Py4J" not in text
    assert sorted(t.name for t in spark.catalog.listTables()) == tables
    assert_victim_intact(spark, victim, digest)


@pytest.mark.spark
@pytest.mark.parametrize("name", ["select", "drop", "table", "from", "`where`", "default.`group`"])
def test_sql_keywords_as_table_names_land_under_exactly_that_name(
    spark: SparkSession, victim: Path, name: str
) -> None:
    digest = support.tree_digest(victim)
    part = parse_target(name).table[-1]  # type: ignore[index]
    quoted = f"`{part}`"
    spark.sql(f"DROP TABLE IF EXISTS {quoted}")
    try:
        first = compat_write(spark.range(3), name)
        again = compat_write(spark.range(3, 5), name, mode="append")
        assert (first.version, again.version) == (0, 1)
        assert sorted(r.id for r in spark.table(quoted).collect()) == [0, 1, 2, 3, 4]
        assert check_table(first.location).compliant
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {quoted}")
    assert_victim_intact(spark, victim, digest)


@pytest.mark.spark
def test_the_location_literal_of_create_table_is_escaped(
    spark: SparkSession, victim: Path, tmp_path: Path
) -> None:
    """``_register_table`` puts the location into a SQL string literal: quotes, backslashes and
    comment markers in it must arrive as the path, nothing else."""
    digest = support.tree_digest(victim)
    location = tmp_path / "it's\\ a; DROP TABLE hx_victim; -- 'dir'"
    compat_write(spark.range(2), str(location))
    spark.sql("DROP TABLE IF EXISTS hx_registered")
    try:
        _register_table(spark, Target(table=("hx_registered",)), str(location), 0)
        detail = spark.sql("DESCRIBE DETAIL hx_registered").collect()[0]
        assert detail.location.removeprefix("file:") == str(location)
        assert sorted(r.id for r in spark.table("hx_registered").collect()) == [0, 1]
    finally:
        spark.sql("DROP TABLE IF EXISTS hx_registered")
    assert_victim_intact(spark, victim, digest)


HOSTILE_COLUMNS = [
    INJECTION,
    "`a``b`",
    "select",
    "from",
    "名前",
    "a.b",
    "{path}",
    "{0.__class__}",
    "' OR 1=1 --",
]


@pytest.mark.spark
def test_hostile_column_names_land_exactly_and_touch_nothing_else(
    spark: SparkSession, victim: Path, tmp_path: Path
) -> None:
    digest = support.tree_digest(victim)
    df = spark.range(4).select(
        F.col("id"), *[(F.col("id") * (i + 1)).alias(n) for i, n in enumerate(HOSTILE_COLUMNS)]
    )
    root = tmp_path / "t"
    compat_write(df, str(root), partition_by=[INJECTION])
    compat_write(df, str(root), mode="append", partition_by=[INJECTION])
    back = spark.read.format("delta").load(str(root))
    assert back.columns == ["id", *HOSTILE_COLUMNS]
    assert support.latest(root, "metaData")["partitionColumns"] == [INJECTION]
    # rows sharing an id are identical; chispa's own row sorting would resolve the names as SQL
    assert_df_equality(back.orderBy("id"), df.unionByName(df).orderBy("id"), ignore_nullable=True)
    assert check_table(root).compliant
    assert_victim_intact(spark, victim, digest)


# --- (b) nothing outside the table root is opened or written -------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the table with a valid, compliant-looking Parquet file in it."""
    probe = build_table(tmp_path / "probe", "v3", files=1)
    d = tmp_path / "outside"
    d.mkdir()
    shutil.copy(probe.data_path(probe.files[0]), d / "secret.parquet")
    return d


def _hostile_adds(secret: Path) -> dict[str, str]:
    rel = os.path.relpath(secret, secret.parent.parent / "t")
    return {
        "absolute": str(secret),
        "dot-dot": rel,
        "dot-dot-encoded": rel.replace(".", "%2E"),
        "nested-dot-dot": "sub/../" + rel,
        "file-uri": secret.as_uri(),
        "file-uri-localhost": "file://localhost" + str(secret),
        "link-in-table": "link.parquet",
        "link-directory": "linkdir/secret.parquet",
    }


def hostile_table(root: Path, outside: Path, case: str) -> str:
    secret = outside / "secret.parquet"
    path = _hostile_adds(secret)[case]
    add = lb.add(path, stats=stats(3), size=secret.stat().st_size)
    add["add"]["baseRowId"] = 100
    add["add"]["defaultRowCommitVersion"] = 0
    build_table(root, "v3", files=1, extra_adds=[add])
    if case == "link-in-table":
        (root / "link.parquet").symlink_to(secret)
    if case == "link-directory":
        (root / "linkdir").symlink_to(outside, target_is_directory=True)
    return path


def watched(secret: Path) -> OpenWatch:
    watch = OpenWatch(secret)
    assert watch.events() == b""
    return watch


def assert_never_opened(watch: OpenWatch, secret: Path) -> None:
    try:
        seen = watch.events()
        secret.read_bytes()
        assert watch.events() != b"", "the watch must see an open (else it proves nothing)"
    finally:
        watch.close()
    assert seen == b"", f"{secret} was opened"


def snapshot_dir(d: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in sorted(d.rglob("*"))}


CASES = list(_hostile_adds(Path("/x/y/secret.parquet")))


@pytest.mark.parametrize("case", CASES)
def test_the_checker_reports_paths_outside_and_never_opens_them(
    tmp_path: Path, outside: Path, case: str
) -> None:
    root = tmp_path / "t"
    path = hostile_table(root, outside, case)
    secret = outside / "secret.parquet"
    watch = watched(secret)
    report = check_table(root)
    code = main(["check", str(root), "--json"])
    assert_never_opened(watch, secret)
    assert code == 1
    assert [(f.code, f.file) for f in report.errors] == [("path_outside_table", path)]
    assert not report.compliant


@pytest.mark.parametrize("case", CASES)
def test_the_emitter_refuses_paths_outside_and_never_opens_or_writes_there(
    tmp_path: Path, outside: Path, case: str
) -> None:
    root = tmp_path / "t"
    path = hostile_table(root, outside, case)
    secret = outside / "secret.parquet"
    before, table_before = snapshot_dir(outside), support.tree_digest(root)
    watch = watched(secret)
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    code = main(["iceberg", str(root)])
    assert_never_opened(watch, secret)
    assert code == 1
    assert [(v.rule, v.observed) for v in err.value.violations] == [("ICEBERG-EMIT-OUTSIDE-ROOT", path)]
    assert snapshot_dir(outside) == before
    assert support.tree_digest(root) == table_before and not (root / "metadata").exists()


def test_the_emitter_never_writes_through_a_linked_metadata_directory(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "t"
    build_table(root, "v3")
    (root / "metadata").symlink_to(outside, target_is_directory=True)
    before = snapshot_dir(outside)
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert err.value.rules == ["ICEBERG-EMIT-OUTSIDE-ROOT"]
    assert "metadata directory" in str(err.value)
    assert snapshot_dir(outside) == before


def test_the_emitter_never_reads_manifests_named_outside_its_tree(tmp_path: Path, outside: Path) -> None:
    """A metadata file edited to point its manifest list elsewhere is refused before that file is read."""
    root = tmp_path / "t"
    table = build_table(root, "v3")
    first = write_iceberg_metadata(root)
    meta = json.loads(first.metadata_path.read_text())
    secret = outside / "secret.parquet"
    for snap in meta["snapshots"]:
        snap["manifest-list"] = secret.as_uri()
    first.metadata_path.write_text(json.dumps(meta))
    lb.LogBuilder(root).commit(1, [lb.commit_info(), lb.txn("app", 1)])
    assert table.files
    watch = watched(secret)
    with pytest.raises(CompatViolation) as err:
        write_iceberg_metadata(root)
    assert_never_opened(watch, secret)
    assert err.value.rules == ["ICEBERG-EMIT-OUTSIDE-ROOT"]


def test_the_checker_never_opens_a_sidecar_outside_the_log(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "t"
    build_table(root, "v3")
    secret = outside / "secret.parquet"
    escape = os.path.relpath(secret, root / "_delta_log" / "_sidecars")
    for n, path in enumerate([escape, str(secret), secret.as_uri()]):
        name = f"{0:020d}.checkpoint.0000000{n}-1234-1234-1234-123456789012.json"
        lines = [{"checkpointMetadata": {"version": 0}}, {"sidecar": {"path": path, "sizeInBytes": 1}}]
        lb.LogBuilder(root).raw(name, b"".join(json.dumps(a).encode() + b"\n" for a in lines))
        watch = watched(secret)
        try:
            check_table(root)
        except IcecompatError:
            pass
        assert_never_opened(watch, secret)
        (root / "_delta_log" / name).unlink()


# --- (c) no table property runs code; no name is a format string ----------------------------------

SENTINEL_MODULE = "hx_sentinel_module"


@pytest.fixture
def sentinel_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable module that creates a file when imported: if it exists, something imported it."""
    sentinel = tmp_path / "IMPORTED"
    mod_dir = tmp_path / "mods"
    mod_dir.mkdir()
    (mod_dir / f"{SENTINEL_MODULE}.py").write_text(
        f"from pathlib import Path\nPath({str(sentinel)!r}).write_text('imported')\nclass Store:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(mod_dir))
    sys.modules.pop(SENTINEL_MODULE, None)
    return sentinel


INERT_PROPERTIES = {
    "hx.module": SENTINEL_MODULE,
    "hx.class": f"{SENTINEL_MODULE}.Store",
    "hx.entry-point": f"{SENTINEL_MODULE}:Store",
    "delta.logStore.class": f"{SENTINEL_MODULE}.Store",
    "hx.import": f"__import__('{SENTINEL_MODULE}')",
    "hx.format": "{0.__class__.__init__.__globals__}",
    "hx.jinja": "{{ self.__init__.__globals__ }}",
    "hx.percent": "%(path)s %s %n",
    "{0.__class__}": "{path}",
}


@pytest.mark.spark
def test_properties_naming_code_are_stored_as_text_and_nothing_is_imported(
    spark: SparkSession, tmp_path: Path, sentinel_module: Path
) -> None:
    root = tmp_path / "t"
    compat_write(spark.range(3), str(root), properties=INERT_PROPERTIES)
    compat_write(spark.range(3, 5), str(root), mode="append", properties=INERT_PROPERTIES)
    stored = support.latest(root, "metaData")["configuration"]
    assert {k: stored.get(k) for k in INERT_PROPERTIES} == INERT_PROPERTIES
    report = check_table(root)
    assert report.compliant, report.render_text()
    report.render_text()
    report._repr_html_()
    assert main(["check", str(root), "--json"]) == 0
    write_iceberg_metadata(root)
    assert not sentinel_module.exists(), "a table property made the package import a module"
    assert SENTINEL_MODULE not in sys.modules


# Keys delta-spark copies into the Hadoop configuration of a write, where a class name is loaded:
# each of the first three made a write load the named class before they were refused.
CLASS_LOADING_PROPERTIES = [
    {"fs.file.impl.disable.cache": "true", "fs.file.impl": "hx.does.not.Exist"},
    {"parquet.crypto.factory.class": "hx.does.not.Exist"},
    {"spark.sql.parquet.output.committer.class": "hx.does.not.Exist"},
    {"io.compression.codecs": "hx.does.not.Exist"},
    {"hadoop.security.group.mapping": "hx.does.not.Exist"},
    {"mapreduce.outputcommitter.factory.class": "hx.does.not.Exist"},
    {"Parquet.Writer.Factory": "hx.does.not.Exist"},
]


@pytest.mark.spark
@pytest.mark.parametrize("props", CLASS_LOADING_PROPERTIES, ids=lambda p: sorted(p)[-1])
def test_properties_that_would_load_classes_are_refused_before_anything_runs(
    spark: SparkSession, table_path: Path, props: dict[str, str]
) -> None:
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(3), str(table_path), properties=props)
    assert not isinstance(err.value, SetupError)
    assert {(v.rule, v.observed) for v in err.value.violations} == {
        ("DELTA-WRITE-CONFIG-PROPERTY", k) for k in props
    }
    assert "hx.does.not.Exist" not in str(err.value)
    assert not table_path.exists()


@pytest.mark.spark
def test_a_table_that_already_has_such_a_property_is_refused_not_run(
    spark: SparkSession, table_path: Path
) -> None:
    compat_write(spark.range(3), str(table_path))
    alter = (
        f"ALTER TABLE delta.`{table_path}` "
        "SET TBLPROPERTIES ('parquet.crypto.factory.class' = 'hx.does.not.Exist')"
    )
    with pytest.raises(CompatViolation) as guarded:  # the session guard refuses to set it ...
        spark.sql(alter)
    assert guarded.value.rules == ["DELTA-WRITE-CONFIG-PROPERTY"]
    support.unguarded_sql(spark, alter)  # ... so the table gets it from a writer without the guard
    before = support.tree_digest(table_path)
    with pytest.raises(CompatViolation) as err:
        compat_write(spark.range(3), str(table_path), mode="append")
    assert err.value.rules == ["DELTA-WRITE-CONFIG-PROPERTY"]
    assert "UNSET TBLPROPERTIES" in err.value.violations[0].fix
    assert support.tree_digest(table_path) == before


@pytest.mark.spark
def test_writer_options_in_those_namespaces_stay_inert(spark: SparkSession, table_path: Path) -> None:
    """Writer options are not table properties: delta-spark does not hand them to Hadoop for writes."""
    result = compat_write(spark.range(3), str(table_path), options=CLASS_LOADING_PROPERTIES[0])
    assert result.version == 0
    assert "fs.file.impl" not in support.latest(table_path, "metaData")["configuration"]


FORMAT_FIELDS = ["{path}", "{0.__class__}", "{observed!r:>{expected}}", "{file}", "{}", "{{x}}", "}{"]


@pytest.mark.parametrize("rule", CATALOG, ids=lambda r: r.id)
def test_rule_messages_render_hostile_values_literally(rule: Any) -> None:
    """str.format fields inside a column path or value are data: every rule renders them verbatim."""
    hostile = "{0.__class__}{path}"
    values = {f: hostile for f in KINDS[rule.kind].fields}
    if "file" in rule.message:
        values["file"] = hostile
    message, fix = rule.render(Finding(hostile, hostile, hostile, values))
    for text, template in ((message, rule.message), (fix, rule.fix)):
        assert "<class" not in text
        if "{" in template:
            assert hostile in text or "{" not in template.replace("{{", "")


@pytest.mark.spark
@pytest.mark.parametrize("name", FORMAT_FIELDS)
def test_format_fields_in_column_names_render_literally_in_violations(
    spark: SparkSession, table_path: Path, name: str
) -> None:
    df = spark.range(2).select(F.col("id").cast("tinyint").alias(name))
    with pytest.raises(CompatViolation) as err:
        compat_write(df, str(table_path), profile="writer-v1")
    (v,) = err.value.violations
    assert (v.rule, v.path) == ("IWC1-NO-BYTE-SHORT", quote_name(name))
    assert f"column `{quote_name(name)}`" in str(err.value)
    assert "<class" not in str(err.value)
    assert not table_path.exists()
