"""A checkpoint's typed ``stats_parsed`` and ``partitionValues_parsed``, rendered as the log's strings.

A checkpoint may carry an ``add``'s statistics only as the struct ``stats_parsed`` (table property
``delta.checkpoint.writeStatsAsJson=false``; PROTOCOL.md "Checkpoints") and its partition values also
as the struct ``partitionValues_parsed``. Everything downstream (the rules' ``numRecords``, the Iceberg
metrics, partition values in manifests) reads the JSON form an ``add`` has in a commit, so where that
form is absent the struct is rendered as it: the same keys (physical names under column mapping,
as the struct has them), values as Delta writes them in JSON stats (numbers as numbers, NaN and the
infinities as the strings Jackson writes, dates as ``YYYY-MM-DD``, timestamps as ISO-8601 in UTC
with ``Z``, timestamps without time zone without it, nulls left out) and partition values serialized
as PROTOCOL.md "Partition Value Serialization" says.

The Parquet type alone cannot tell a ``timestamp`` from a ``timestamp_ntz`` (an INT96 or a
not-UTC-adjusted INT64 both read as a timestamp without zone), so the table schema decides: each
leaf of the struct is looked up by its physical path in the schema of the checkpoint's ``metaData``.

Everything is done column by column with Arrow kernels; only string values are escaped one by one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icecompat_writer.compat import indices_nonzero
from icecompat_writer.schema import JsonObject

__all__ = [
    "ParsedColumns", "TypeTree", "render_json_stats", "render_partition_values", "render_stats", "type_tree",
]  # fmt: skip

_PHYSICAL_NAME = "delta.columnMapping.physicalName"
_MODE_KEY = "delta.columnMapping.mode"

TypeTree = JsonObject
"""Physical name -> Delta type: a type name (``"timestamp"``, ``"decimal(10,2)"``), a nested
:data:`TypeTree` for a struct, or None for a type whose statistics are not rendered by value
(arrays, maps, variants)."""


@dataclass(frozen=True)
class ParsedColumns:
    """The ``stats_parsed`` and ``partitionValues_parsed`` values of some checkpoint ``add`` rows
    (None: the file has no such column), aligned with the rows they were read with."""

    stats: pa.Array | None
    partition_values: pa.Array | None


def type_tree(schema: JsonObject | None, configuration: Mapping[str, str]) -> TypeTree:
    """The table schema keyed as statistics are: by physical name when column mapping is on."""
    mode = str(configuration.get(_MODE_KEY, "none")).strip().lower()
    physical = mode in ("name", "id")
    return _struct_tree(schema or {}, physical)


def _struct_tree(struct: Mapping[str, Any], physical: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in struct.get("fields") or ():
        if not isinstance(f, Mapping):
            continue
        name = f.get("name")
        meta = f.get("metadata") or {}
        key = meta.get(_PHYSICAL_NAME) if physical and isinstance(meta, Mapping) else None
        key = key if isinstance(key, str) else name
        if not isinstance(key, str):
            continue
        t = f.get("type")
        if isinstance(t, str):
            out[key] = t
        elif isinstance(t, Mapping) and t.get("type") == "struct":
            out[key] = _struct_tree(t, physical)
        else:
            out[key] = None
    return out


# --- statistics ------------------------------------------------------------------------------------


def render_stats(stats: pa.Array, tree: TypeTree) -> pa.Array:
    """``stats_parsed`` values as JSON stats strings (null where the struct is null).

    ``numRecords`` comes first, as delta-spark writes it (readers look for it at the start).
    """
    if not pa.types.is_struct(stats.type):
        return pa.nulls(len(stats), pa.string())
    order = sorted(range(stats.type.num_fields), key=lambda i: stats.type.field(i).name != "numRecords")
    parts = []
    for i in order:
        name = stats.type.field(i).name
        child = _field(stats, i)
        if name in ("minValues", "maxValues"):
            rendered = _object(child, tree, _value_json)
        elif name == "nullCount":
            rendered = _object(child, tree, lambda arr, _t: _plain_json(arr))
        else:
            rendered = _plain_json(child)
        parts.append(_member(name, rendered))
    return _join_object(parts, stats)


def render_json_stats(parsed: JsonObject) -> str:
    """A ``stats_parsed`` object of a JSON checkpoint as the JSON stats string.

    In a JSON file the struct's values are already JSON as Delta writes stats (its writer serialises
    the typed struct the way it serialises ``stats``), so rendering drops the nulls and puts
    ``numRecords`` first, as :func:`render_stats` does for the Parquet form.
    """
    ordered = sorted(parsed.items(), key=lambda kv: kv[0] != "numRecords")
    return json.dumps(
        {k: _without_nulls(v) for k, v in ordered if v is not None}, separators=(",", ":"), ensure_ascii=False
    )


def _without_nulls(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def _field(arr: pa.Array, i: int) -> pa.Array:
    """Child ``i`` of a struct array with the parent's nulls applied."""
    assert isinstance(arr, pa.StructArray)
    return arr.field(i) if arr.null_count == 0 else pc.struct_field(arr, [i])


def _member(name: str, rendered: pa.Array) -> pa.Array:
    """``"name":value`` where ``rendered`` is not null, else null."""
    return pc.binary_join_element_wise(json.dumps(name, ensure_ascii=False) + ":", rendered, "")


def _join_object(parts: list[pa.Array], parent: pa.Array) -> pa.Array:
    n = len(parent)
    if parts:
        # ",member" per present member, concatenated, the first comma cut (null_handling="skip"
        # would be the direct way, but pyarrow 26 drops rows where every member is null)
        prefixed = [pc.binary_join_element_wise(",", p, "") for p in parts]
        joined = pc.binary_join_element_wise(*prefixed, "", null_handling="replace", null_replacement="")
        body = pc.binary_replace_slice(joined, 0, 1, "")  # the first byte is always that comma
    else:
        body = pa.repeat(pa.scalar("", pa.string()), n)
    out = pc.binary_join_element_wise("{", body, "}", "")
    if parent.null_count:
        out = pc.if_else(parent.is_valid(), out, pa.scalar(None, pa.string()))
    return out


def _object(arr: pa.Array, tree: object, leaf: Callable[[pa.Array, object], pa.Array]) -> pa.Array:
    """A struct of per-column values (``minValues``, ``maxValues``, ``nullCount``) as a JSON object."""
    if not pa.types.is_struct(arr.type):
        return leaf(arr, tree)
    parts = []
    for i in range(arr.type.num_fields):
        name = arr.type.field(i).name
        sub = tree.get(name) if isinstance(tree, Mapping) else None
        child = _field(arr, i)
        parts.append(_member(name, _object(child, sub, leaf)))
    return _join_object(parts, arr)


def _plain_json(arr: pa.Array) -> pa.Array:
    """Integers and booleans as JSON (the counts, ``numRecords``, ``tightBounds``); nothing else."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return arr.cast(pa.string())
    return pa.nulls(len(arr), pa.string())


def _value_json(arr: pa.Array, delta_type: object) -> pa.Array:
    """One column's min or max values as JSON, typed by the table schema where the file's type is
    ambiguous; null for what Delta keeps no value statistic of (binary, nested, unknown)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return arr.cast(pa.string())
    if pa.types.is_floating(t):
        return _float_json(arr)
    if pa.types.is_boolean(t):
        return arr.cast(pa.string())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _quoted(arr)
    if pa.types.is_date(t):
        return _quote_plain(arr.cast(pa.date32()).cast(pa.string()))
    if pa.types.is_timestamp(t):
        ntz = delta_type == "timestamp_ntz" or (delta_type is None and t.tz is None)
        return _quote_plain(_timestamp_text(arr, ntz=ntz, sep="T", unit="ms"))
    return pa.nulls(n, pa.string())


def _float_json(arr: pa.Array) -> pa.Array:
    text = arr.cast(pa.string())
    for raw, json_text in (("nan", '"NaN"'), ("inf", '"Infinity"'), ("-inf", '"-Infinity"')):
        text = pc.if_else(pc.equal(text, raw), pa.scalar(json_text), text)
    return text


def _quoted(arr: pa.Array) -> pa.Array:
    """Strings as JSON strings: quoted, and escaped one by one only where they need it."""
    arr = arr.cast(pa.string())
    plain = _quote_plain(arr)
    needs = pc.fill_null(pc.match_substring_regex(arr, _NEEDS_ESCAPE), False)
    if not pc.any(needs).as_py():
        return plain
    dumps = json.dumps
    escaped = pa.array(
        [None if v is None else dumps(v, ensure_ascii=False) for v in arr.filter(needs).to_pylist()],
        pa.string(),
    )
    where = indices_nonzero(needs)
    values = plain.to_pylist()
    for i, v in zip(where.to_pylist(), escaped.to_pylist(), strict=True):
        values[i] = v
    return pa.array(values, pa.string())


_NEEDS_ESCAPE = r'["\\\x00-\x1f]'  # a quote, a backslash or a control character


def _quote_plain(text: pa.Array) -> pa.Array:
    """Text that needs no escaping (digits, dashes, colons) in quotes."""
    return pc.binary_join_element_wise('"', text, '"', "")


def _timestamp_text(arr: pa.Array, *, ntz: bool, sep: str, unit: str) -> pa.Array:
    """Timestamps as ``YYYY-MM-DD<sep>HH:MM:SS.fff[fff]`` (``Z`` appended unless ``ntz``).

    The stored value is an instant in UTC (or, without time zone, the wall clock itself); either way
    its fields are read in UTC. ``unit`` truncates, as Delta truncates statistics to milliseconds.
    """
    t = arr.type
    assert isinstance(t, pa.TimestampType)
    naive = arr.cast(pa.timestamp(t.unit))  # drops the zone, keeps the UTC-based value
    truncated = naive.cast(pa.timestamp(unit), safe=False)
    # the cast writes "YYYY-MM-DD HH:MM:SS.fff[fff]" (30 times faster than strftime)
    text = truncated.cast(pa.string())
    if sep != " ":
        text = pc.replace_substring(text, " ", sep, max_replacements=1)
    return text if ntz else pc.binary_join_element_wise(text, "Z", "")


# --- partition values ------------------------------------------------------------------------------


def render_partition_values(values: pa.Array, tree: TypeTree) -> pa.Array | None:
    """``partitionValues_parsed`` values as the ``partitionValues`` map (null where the struct is
    null; a null value stays null), or None when a partition column has a type that has no string
    form here (nested types)."""
    if not pa.types.is_struct(values.type):
        return None
    n = len(values)
    names = [values.type.field(i).name for i in range(values.type.num_fields)]
    columns = []
    for i, name in enumerate(names):
        text = _partition_text(_field(values, i), tree.get(name))
        if text is None:
            return None
        columns.append(text)
    k = len(names)
    if k == 0:
        items: pa.Array = pa.array([], pa.string())
    else:
        # interleave: row r's values are items[r*k : r*k + k]
        stacked = pa.concat_arrays(columns)
        order = pa.array([c * n + r for r in range(n) for c in range(k)], pa.int64())
        items = stacked.take(order)
    keys = pa.array(names * n, pa.string())
    offsets = pa.array(range(0, n * k + 1, k) if k else [0] * (n + 1), pa.int32())
    mask = None if values.null_count == 0 else pc.invert(values.is_valid())
    return pa.MapArray.from_arrays(offsets, keys, items, mask=mask)


def _partition_text(arr: pa.Array, delta_type: object) -> pa.Array | None:
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t):
        return arr.cast(pa.string())
    if pa.types.is_floating(t):
        text = arr.cast(pa.string())
        for raw, out in (("nan", "NaN"), ("inf", "Infinity"), ("-inf", "-Infinity")):
            text = pc.if_else(pc.equal(text, raw), pa.scalar(out), text)
        return text
    if pa.types.is_date(t):
        return arr.cast(pa.date32()).cast(pa.string())
    if pa.types.is_timestamp(t):
        ntz = delta_type == "timestamp_ntz" or (delta_type is None and t.tz is None)
        return _timestamp_text(arr, ntz=ntz, sep=" " if ntz else "T", unit="us")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([None if v is None else v.decode("latin-1") for v in arr.to_pylist()], pa.string())
    return None
