"""Kinds on data files: what each AddFile claims and what its Parquet footer holds."""

from __future__ import annotations

from collections.abc import Iterator

from icecompat_writer.facts import ParquetField, ParquetFooter
from icecompat_writer.rules.context import EvalContext
from icecompat_writer.rules.footer import FooterNode, walk_footer
from icecompat_writer.rules.kinds.registry import finding, kind, shown
from icecompat_writer.rules.model import Finding, Rule, Scope
from icecompat_writer.rules.schema import (
    quote_name,
    type_category,
)


@kind("num_records_present", Scope.FILE, fields=("file",))
def _num_records_present(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every AddFile carries the ``numRecords`` statistic."""
    for f in ctx.files:
        if f.num_records is None:
            yield finding(
                observed="no stats" if not f.has_stats else "stats without numRecords",
                expected="numRecords",
                file=f.path,
            )


@kind("row_ids_assigned", Scope.FILE, params=("key",), fields=("file",))
def _row_ids_assigned(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """With row tracking enabled, every AddFile carries ``baseRowId`` and ``defaultRowCommitVersion``."""
    if str(ctx.metadata.configuration.get(rule.params["key"], "")).strip().lower() != "true":
        return
    for f in ctx.files:
        missing = [
            name
            for name, value in (
                ("baseRowId", f.base_row_id),
                ("defaultRowCommitVersion", f.default_row_commit_version),
            )
            if value is None
        ]
        if missing:
            yield finding(
                observed="no " + " and no ".join(missing),
                expected="baseRowId and defaultRowCommitVersion",
                file=f.path,
            )


@kind("no_deletion_vector_files", Scope.FILE, fields=("file",))
def _no_deletion_vector_files(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """No AddFile carries a deletion vector."""
    for f in ctx.files:
        if f.has_deletion_vector:
            yield finding(observed="deletion vector", expected="none", file=f.path)


@kind("partition_columns_materialized", Scope.FILE, fields=("file",))
def _partition_columns_materialized(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every partition column is present (under its physical name) in each data file whose footer
    was read."""
    parts = ctx.metadata.partition_columns
    if not parts:
        return
    names = []
    for p in parts:
        node = ctx.schema.top_level(p)
        names.append((quote_name(p), node.physical_name if node is not None else p))
    for f in ctx.files:
        if f.footer is None:
            continue
        for path, physical in names:
            if f.footer.field(physical) is None:
                yield finding(
                    path, observed="absent from the file", expected=f"a column named {physical}", file=f.path
                )


class _FooterNodes:
    """The table schema paired with each data file's footer schema, computed once per distinct footer
    schema tree: the files of a table are usually written with one schema, and pairing is the costly
    part of the file rules on a large table (the nodes depend only on the schema and the tree)."""

    def __init__(self, ctx: EvalContext) -> None:
        self.model = ctx.schema.model if ctx.schema.model is not None else [f.raw for f in ctx.schema.top]
        self.seen: dict[tuple[ParquetField, ...], list[FooterNode]] = {}

    def of(self, footer: ParquetFooter) -> list[FooterNode]:
        nodes = self.seen.get(footer.fields)
        if nodes is None:
            nodes = self.seen[footer.fields] = list(walk_footer(self.model, footer))
        return nodes


@kind("timestamps_int64", Scope.FILE, fields=("file",))
def _timestamps_int64(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every ``timestamp``/``timestamp_ntz`` value present in a data file is stored as INT64 (not
    INT96)."""
    nodes = _FooterNodes(ctx)
    for f in ctx.files:
        if f.footer is None:
            continue
        for node in nodes.of(f.footer):
            if (
                type_category(node.type) in ("timestamp", "timestamp_ntz")
                and node.node.physical_type != "INT64"
            ):
                yield finding(
                    node.path, observed=node.node.physical_type or "a group", expected="INT64", file=f.path
                )


@kind("parquet_field_ids", Scope.FILE, fields=("file",))
def _parquet_field_ids(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """Every schema node present in a data file (columns, nested fields, array elements, map keys and
    values) carries the Parquet field id the column mapping metadata assigns it."""
    nodes = _FooterNodes(ctx)
    for f in ctx.files:
        if f.footer is None:
            continue
        for node in nodes.of(f.footer):
            if node.expected_id is not None and node.node.field_id != node.expected_id:
                yield finding(
                    node.path,
                    observed=shown(None if node.node.field_id is None else str(node.node.field_id)),
                    expected=node.expected_id,
                    file=f.path,
                )


@kind("row_tracking_field_id", Scope.FILE, params=("property", "field_id"), fields=("file", "key"))
def _row_tracking_field_id(ctx: EvalContext, rule: Rule) -> Iterator[Finding]:
    """The materialized row-tracking column named by table property ``property`` carries Parquet
    field id ``field_id`` in every data file that contains it."""
    key = rule.param("property")
    name = ctx.config.get(key)
    if not name:
        return
    want = int(rule.param("field_id"))
    for f in ctx.files:
        node = f.footer.field(name) if f.footer is not None else None
        if node is not None and node.field_id != want:
            yield finding(
                quote_name(name),
                observed=shown(None if node.field_id is None else str(node.field_id)),
                expected=want,
                file=f.path,
                key=key,
            )
