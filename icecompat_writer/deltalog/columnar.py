"""File actions as Arrow columns: the vectorized half of log replay.

Building one Python dict per ``add`` action and one :class:`AddFile` per live file was four fifths of
checking a 100,000-file table. Here file actions stay columnar from the file they were read from to
the reconciled result:

* a checkpoint's ``add`` column is taken as the Parquet file holds it, each field cast to one
  canonical type (:data:`FILE_ACTIONS_SCHEMA`), never converted to Python objects;
* the ``add``/``remove`` lines of a large JSON file are parsed by pyarrow.json into the same schema
  (:func:`json_file_actions`; readers.py decides when);
* actions read line by line (small commits, damaged files, values the columns cannot hold exactly)
  join as rows that only carry their key and point at their raw dict (``raw``).

:func:`reconcile` applies the protocol's reconciliation to these rows with vectorized kernels, and
:class:`~.live_columns.LiveFiles` keeps the result as columns, building an AddFile only when one is
asked for.

Exactness is the rule: every AddFile built from the columns equals ``AddFile.from_json`` of the
action's JSON object (or of the checkpoint row in JSON shape), and the order of live files is the
order the dict-based reconciliation gives. Whatever the columns cannot represent exactly (a
``dataChange`` written as ``null``, partition values of another type, a path that is not UTF-8, ...)
makes the caller take the line-by-line path for that file, or makes the row a raw one.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from icecompat_writer.compat import indices_nonzero
from icecompat_writer.schema import JsonDict, JsonObject

from .files import dv_unique_id
from .parsed import ParsedColumns, TypeTree, render_partition_values, render_stats

__all__ = [
    "CONTENT_FIELDS",
    "FILE_ACTIONS_SCHEMA",
    "checkpoint_adds",
    "fill_parsed",
    "json_file_actions",
    "line_rows",
    "only_adds",
    "reconcile",
]

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int64()),
        ("sizeInBytes", pa.int64()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
# The fields of an AddFile, named and typed as the log writes them (integers widened to int64).
CONTENT_FIELDS: tuple[pa.Field, ...] = (
    pa.field("path", pa.string()),
    pa.field("partitionValues", STRING_MAP),
    pa.field("size", pa.int64()),
    pa.field("modificationTime", pa.int64()),
    pa.field("dataChange", pa.bool_()),
    pa.field("stats", pa.string()),
    pa.field("tags", STRING_MAP),
    pa.field("deletionVector", DV_TYPE),
    pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()),
    pa.field("clusteringProvider", pa.string()),
)
FILE_ACTIONS_SCHEMA = pa.schema(
    [
        # 1: add, 0: remove, null: not a file action (a checkpoint row holding another action);
        # key_path is null exactly where kind is
        pa.field("kind", pa.int8()),
        # The logical file's key (path, deletionVector.uniqueId) as bytes (UTF-8, lone surrogates
        # kept), so that rows read line by line, whose strings may not be valid UTF-8, share it.
        pa.field("key_path", pa.binary()),
        pa.field("key_dv", pa.binary()),  # b"" without a DV, b"D" + uniqueId with one
        pa.field("raw", pa.int64()),  # index of the raw action (rows read line by line), else null
        *CONTENT_FIELDS,
    ]
)


# --- conforming Arrow columns to the canonical types ----------------------------------------------


def _stringlike(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array | None:
    """``arr`` as ``target`` when that changes no value, else None (the caller takes the slow path)."""
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(arr), target)
    try:
        if target == pa.string():
            return arr.cast(target) if _stringlike(t) else None
        if target == pa.int64():
            return arr.cast(target, safe=True) if pa.types.is_integer(t) else None
        if target == pa.bool_():
            return arr if pa.types.is_boolean(t) else None
        if target == STRING_MAP:
            if pa.types.is_map(t) and _stringlike(t.key_type) and _stringlike(t.item_type):
                return arr.cast(target)
            return None
        if target == DV_TYPE:
            return _conform_struct(arr, DV_TYPE) if pa.types.is_struct(t) else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    raise AssertionError(f"no canonical conversion to {target}")


def _conform_struct(arr: pa.Array, target: pa.StructType) -> pa.Array | None:
    n = len(arr)
    present = {arr.type.field(i).name for i in range(arr.type.num_fields)}
    children = []
    for f in target:
        if f.name in present:
            child = _conform(pc.struct_field(arr, f.name), f.type)
            if child is None:
                return None
        else:
            child = pa.nulls(n, f.type)
        children.append(child)
    mask = pc.invert(arr.is_valid()) if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _dv_keys(dv: pa.Array) -> pa.Array:
    """``key_dv`` of canonical deletionVector values: b"" for none, b"D" + the derived uniqueId."""
    n = len(dv)
    if dv.null_count == n:
        return pa.repeat(pa.scalar(b"", pa.binary()), n)
    storage = pc.fill_null(pc.struct_field(dv, "storageType"), "")
    where = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), "")
    offset = pc.struct_field(dv, "offset")
    at = pc.fill_null(pc.binary_join_element_wise("@", offset.cast(pa.string()), ""), "")
    unique = pc.binary_join_element_wise("D", storage, where, at, "")
    return pc.if_else(dv.is_valid(), unique, "").cast(pa.binary())


def _batch(columns: dict[str, pa.Array], n: int) -> pa.RecordBatch:
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in FILE_ACTIONS_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=FILE_ACTIONS_SCHEMA)


def checkpoint_adds(add: pa.Array) -> pa.RecordBatch | None:
    """A checkpoint's ``add`` struct column as file-action rows, or None when a field's type cannot
    be held exactly (the caller then converts rows to dicts as before).

    Rows without an add (other actions, tombstones) or without a path get ``kind`` null: replay skips
    them, as it skips a checkpoint add without a usable path.
    """
    if not pa.types.is_struct(add.type):
        return None
    n = len(add)
    present = {add.type.field(i).name for i in range(add.type.num_fields)}
    columns: dict[str, pa.Array] = {}
    for f in CONTENT_FIELDS:
        if f.name not in present:
            continue
        conformed = _conform(pc.struct_field(add, f.name), f.type)
        if conformed is None:
            return None
        columns[f.name] = conformed
    path = columns.get("path")
    if path is None:
        path = columns["path"] = pa.nulls(n, pa.string())
    live = pc.and_(add.is_valid(), path.is_valid())
    columns["kind"] = pc.if_else(live, pa.scalar(1, pa.int8()), pa.scalar(None, pa.int8()))
    columns["key_path"] = path.cast(pa.binary())
    dv = columns.get("deletionVector")
    columns["key_dv"] = _dv_keys(dv if dv is not None else pa.nulls(n, DV_TYPE))
    return _batch(columns, n)


def only_adds(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its remove rows turned into non-actions (a checkpoint's removes are tombstones)."""
    is_add = pc.fill_null(pc.equal(batch.column("kind"), 1), False)
    kind = pc.if_else(is_add, pa.scalar(1, pa.int8()), pa.scalar(None, pa.int8()))
    key = pc.if_else(is_add, batch.column("key_path"), pa.scalar(None, pa.binary()))
    batch = batch.set_column(0, FILE_ACTIONS_SCHEMA.field("kind"), kind)
    return batch.set_column(1, FILE_ACTIONS_SCHEMA.field("key_path"), key)


def line_rows(
    kinds: list[int], paths: list[str], dv_keys: list[str], raws: list[int | None]
) -> pa.RecordBatch:
    """Rows for actions read line by line: the key, and for adds the index of the raw dict."""
    n = len(kinds)
    return _batch(
        {
            "kind": pa.array(kinds, pa.int8()),
            "key_path": pa.array([p.encode("utf-8", "surrogatepass") for p in paths], pa.binary()),
            "key_dv": pa.array([k.encode("utf-8", "surrogatepass") for k in dv_keys], pa.binary()),
            "raw": pa.array(raws, pa.int64()),
        },
        n,
    )


def line_dv_key(dv: JsonObject | None) -> str:
    """``key_dv`` (as text) of a deletionVector in JSON form, None meaning no DV."""
    return "" if dv is None else "D" + str(dv_unique_id(dv))


# --- JSON lines through pyarrow.json --------------------------------------------------------------

_JSON_ADD = pa.struct(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("deletionVector", DV_TYPE),
        ("baseRowId", pa.int64()),
        ("defaultRowCommitVersion", pa.int64()),
        ("clusteringProvider", pa.string()),
    ]
)
_SCALAR_ADD_FIELDS = (
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "baseRowId",
    "defaultRowCommitVersion",
    "clusteringProvider",
)
_JSON_REMOVE = pa.struct([("path", pa.string()), ("deletionVector", DV_TYPE)])
# partitionValues and tags are inferred (JSON objects become structs; converted to maps below); any
# other field is inferred and ignored. A value of another type than declared fails the parse.
_JSON_SCHEMA = pa.schema([("add", _JSON_ADD), ("remove", _JSON_REMOVE)])


def json_file_actions(data: bytes, lines: int) -> pa.RecordBatch | None:
    """File-action rows of ``lines`` JSON lines that each hold one ``add`` or ``remove``, or None.

    None whenever the result could differ from reading each line with ``json.loads`` and
    ``AddFile.from_json``: a line pyarrow rejects (or reads differently: two objects on a line), a
    line with another action or none, an add or remove without a non-empty path, a deletion vector
    without storageType/pathOrInlineDv (its uniqueId would read "None"), a ``dataChange`` of null
    (``from_json`` reads an explicit null as False, an absent one as True), partition values or tags
    that are not all strings, or a key present in one row and absent (or null) in another. The
    caller then reads the file line by line, findings included. Map keys come in the order of the
    first line that has them: the same mapping, possibly iterated in another order.
    """
    try:
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(len(data) + 1, 1 << 20)),
            parse_options=pj.ParseOptions(
                explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="infer", newlines_in_values=False
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != lines or set(table.column_names) != {"add", "remove"}:
        return None
    table = table.combine_chunks()
    add = _single_chunk(table.column("add"))
    remove = _single_chunk(table.column("remove"))
    is_add = add.is_valid()
    if not pc.all(pc.xor(is_add, remove.is_valid())).as_py():
        return None
    add_type = add.type
    assert isinstance(add_type, pa.StructType)
    names = {add_type.field(i).name for i in range(add_type.num_fields)}
    for action, on in ((add, is_add), (remove, pc.invert(is_add))):
        path = pc.struct_field(action, "path")
        if _any(on, pc.or_kleene(pc.is_null(path), pc.equal(pc.binary_length(path), 0))):
            return None
        dv = pc.struct_field(action, "deletionVector")
        for field in ("storageType", "pathOrInlineDv"):
            if _any(dv.is_valid(), pc.is_null(pc.struct_field(dv, field))):
                return None
    if _any(is_add, pc.is_null(pc.struct_field(add, "dataChange"))):
        return None
    n = table.num_rows
    columns: dict[str, pa.Array] = {}
    for name in ("partitionValues", "tags"):
        if name in names:
            converted = _struct_to_map(pc.struct_field(add, name))
            if converted is None:
                return None
            columns[name] = converted
    for name in _SCALAR_ADD_FIELDS:
        columns[name] = pc.struct_field(add, name)
    add_dv = _conform_struct(pc.struct_field(add, "deletionVector"), DV_TYPE)
    remove_dv = _conform_struct(pc.struct_field(remove, "deletionVector"), DV_TYPE)
    assert add_dv is not None and remove_dv is not None  # declared with the canonical types
    columns["deletionVector"] = add_dv
    path = pc.if_else(is_add, pc.struct_field(add, "path"), pc.struct_field(remove, "path"))
    columns["path"] = path
    columns["kind"] = pc.if_else(is_add, pa.scalar(1, pa.int8()), pa.scalar(0, pa.int8()))
    columns["key_path"] = path.cast(pa.binary())
    columns["key_dv"] = pc.if_else(is_add, _dv_keys(add_dv), _dv_keys(remove_dv))
    return _batch(columns, n)


def _single_chunk(column: pa.ChunkedArray) -> pa.Array:
    return column.chunk(0) if column.num_chunks == 1 else pa.concat_arrays(column.chunks)


def _any(where: pa.Array, condition: pa.Array) -> bool:
    """Whether ``condition`` holds on some row where ``where`` does (nulls in ``condition``: no)."""
    return bool(pc.any(pc.and_(where, pc.fill_null(condition, False))).as_py())


def _struct_to_map(arr: pa.Array) -> pa.Array | None:
    """An inferred JSON object column (a struct) as ``map<string, string>``; None when not exact."""
    n = len(arr)
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(n, STRING_MAP)
    if not pa.types.is_struct(t):
        return None
    valid = arr.is_valid()
    keys = [t.field(i).name for i in range(t.num_fields)]
    children = [pc.struct_field(arr, i) for i in range(t.num_fields)]
    for child in children:
        if not pa.types.is_string(child.type) or child.null_count != arr.null_count:
            return None  # a value that is not a string, or a key missing (or null) in some object
    k = len(keys)
    offsets = pc.cumulative_sum(pc.if_else(valid, pa.scalar(k, pa.int32()), pa.scalar(0, pa.int32())))
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), offsets.cast(pa.int32())])
    rows = indices_nonzero(valid)
    m = len(rows)
    if k == 0:
        key_arr, items = pa.array([], pa.string()), pa.array([], pa.string())
    elif k == 1:
        key_arr = pa.repeat(pa.scalar(keys[0], pa.string()), m)
        items = children[0].take(rows)
    else:
        flat = pa.concat_arrays([child.take(rows) for child in children])  # key j of row r: j * m + r
        position = pa.array(range(m * k), pa.int64())
        row = pc.divide(position, k)
        key_index = pc.subtract(position, pc.multiply(row, k))
        items = flat.take(pc.add(pc.multiply(key_index, m), row))
        key_arr = pa.array(keys, pa.string()).take(key_index)
    mask = pc.invert(valid) if arr.null_count else None
    return pa.MapArray.from_arrays(offsets, key_arr, items, type=STRING_MAP, mask=mask)


# --- reconciliation -------------------------------------------------------------------------------


def reconcile(actions: pa.Table) -> pa.Table:
    """The live rows of ``actions`` (file actions in log order), in dict order.

    PROTOCOL.md "Action Reconciliation": the newest action per ``(path, deletionVector.uniqueId)``
    wins and a remove deletes the key. Order and values are exactly those of inserting each add into
    a dict (``d[key] = add``) and popping each remove: a key keeps the position of the add that
    (re)created it and takes the value of its latest add. Only rows whose path occurs more than once
    are reconciled one by one; every other add is simply live where it stands.
    """
    if actions.num_rows == 0:
        return actions
    kind = actions.column("kind")
    keys = actions.column("key_path")  # null exactly on the rows that are not actions
    is_add = pc.fill_null(pc.equal(kind, 1), False)
    counts = pc.value_counts(keys)
    repeated = counts.field("values").filter(pc.greater(counts.field("counts"), 1)).drop_null()
    if len(repeated) == 0:
        # every path occurs once: each add is live, each remove is of a file not in this log
        return _select(actions, indices_nonzero(is_add).cast(pa.int64()))
    contested = pc.is_in(keys, value_set=repeated)
    simple = indices_nonzero(pc.and_(is_add, pc.invert(contested))).cast(pa.int64())
    where = indices_nonzero(contested).cast(pa.int64())
    state: dict[tuple[bytes, bytes], list[int]] = {}
    for pos, path, dv, add in zip(
        where.to_pylist(),
        keys.take(where).to_pylist(),
        actions.column("key_dv").take(where).to_pylist(),
        is_add.take(where).to_pylist(),
        strict=True,
    ):
        key = (path, dv)
        if add:
            entry = state.get(key)
            if entry is None:
                state[key] = [pos, pos]
            else:
                entry[1] = pos
        else:
            state.pop(key, None)
    if not state:
        return _select(actions, simple)
    first = pa.array([e[0] for e in state.values()], pa.int64())
    last = pa.array([e[1] for e in state.values()], pa.int64())
    order = pc.sort_indices(pa.concat_arrays([simple, first]))
    return _select(actions, pa.concat_arrays([simple, last]).take(order))


_MAX_RUNS = 256


def _select(table: pa.Table, rows: pa.Array) -> pa.Table:
    """``table.take(rows)``, without copying when ``rows`` is a few runs of consecutive rows (the
    usual case: a checkpoint minus what the commits after it removed): slices of the columns as they
    were read, joined as chunks."""
    if len(rows) == 0:
        return table.slice(0, 0)
    step = pc.pairwise_diff(rows)
    breaks = indices_nonzero(pc.fill_null(pc.not_equal(step, 1), False)).to_pylist()
    if len(breaks) >= _MAX_RUNS:
        return table.take(rows)
    if not breaks and len(rows) == table.num_rows and rows[0].as_py() == 0:
        return table  # every row, in order
    starts = [0, *breaks]
    ends = [*breaks, len(rows)]
    firsts = rows.take(pa.array(starts, pa.int64())).to_pylist()
    slices = [table.slice(first, end - start) for first, start, end in zip(firsts, starts, ends, strict=True)]
    return pa.concat_tables(slices)


# --- typed checkpoint columns ---------------------------------------------------------------------


def fill_parsed(
    entry: pa.RecordBatch | list[JsonDict], parsed: ParsedColumns, tree: TypeTree
) -> pa.RecordBatch | list[JsonDict]:
    """``entry`` (checkpoint adds as rows or dicts) with ``stats`` and ``partitionValues`` taken from
    the rendered ``stats_parsed``/``partitionValues_parsed`` where an add has no string form.

    The string form always wins where both exist: it is what the writer wrote, and what delta-spark
    itself prefers.
    """
    stats = None if parsed.stats is None else render_stats(parsed.stats, tree)
    values = (
        None if parsed.partition_values is None else render_partition_values(parsed.partition_values, tree)
    )
    if isinstance(entry, list):
        return _fill_dicts(entry, stats, values)
    batch = entry
    if stats is not None:
        i = FILE_ACTIONS_SCHEMA.get_field_index("stats")
        batch = batch.set_column(i, FILE_ACTIONS_SCHEMA.field(i), pc.coalesce(batch.column(i), stats))
    if values is not None:
        i = FILE_ACTIONS_SCHEMA.get_field_index("partitionValues")
        current = batch.column(i)
        if current.null_count == len(current):
            merged = values
        else:
            n = len(current)
            rows = pa.array(range(n), pa.int64())
            pick = pc.if_else(current.is_valid(), rows, pc.add(rows, n))
            merged = pa.concat_arrays([current, values]).take(pick)
        batch = batch.set_column(i, FILE_ACTIONS_SCHEMA.field(i), merged)
    return batch


def _fill_dicts(
    adds: list[JsonDict], stats: pa.Array | None, values: pa.Array | None
) -> list[JsonDict]:
    stats_list = None if stats is None else stats.to_pylist()
    values_list = None if values is None else values.to_pylist()
    out = []
    for i, add in enumerate(adds):
        if stats_list is not None and add.get("stats") is None and stats_list[i] is not None:
            add = {**add, "stats": stats_list[i]}
        if values_list is not None and add.get("partitionValues") is None and values_list[i] is not None:
            add = {**add, "partitionValues": dict(values_list[i])}
        out.append(add)
    return out
