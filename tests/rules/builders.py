"""Builders for Delta schema JSON, table states and hand-made data-file facts, shared by the rule and
planning tests."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest

from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
from icecompat_writer.facts import DataFileFacts, ParquetField, ParquetFooter
from icecompat_writer.planning import plan
from icecompat_writer.rules.schema import CM_ID, CM_NESTED_IDS, CM_PHYSICAL_NAME, type_category
from icecompat_writer.schema import parse_schema

PROFILES = ("v3", "writer-v1", "writer-v3")


def field(name: str, type_: Any, meta: dict | None = None, nullable: bool = True) -> dict:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": dict(meta or {})}


def struct(*fields: dict) -> dict:
    return {"type": "struct", "fields": list(fields)}


def array(element: Any, contains_null: bool = True) -> dict:
    return {"type": "array", "elementType": element, "containsNull": contains_null}


def map_(key: Any, value: Any, value_contains_null: bool = True) -> dict:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": value_contains_null}


def mapped(i: int, physical: str | None = None, **extra: Any) -> dict:
    return {CM_ID: i, CM_PHYSICAL_NAME: physical or f"col-{i}", **extra}


# The nested, oddly named schema every conformance case starts from: arrays of structs, a map with a
# struct key and an array-of-struct value, a map of maps, structs five deep, and names with spaces,
# dots, backticks and non-ASCII letters.
BASE_SCHEMA = struct(
    field("id", "long"),
    field("my col", "string"),
    field("a.b", struct(field("x.y", "integer"), field("q`uote", "string"))),
    field("ünï", "date"),
    field("arr", array(struct(field("c", "integer"), field("d", array(struct(field("e", "long"))))))),
    field(
        "m", map_(struct(field("k1", "string"), field("k2", "integer")), array(struct(field("v", "double"))))
    ),
    field("mm", map_("string", map_("integer", array("long")))),
    field(
        "deep",
        struct(
            field(
                "l1",
                struct(
                    field("l2", struct(field("l3", struct(field("l4", struct(field("l5", "timestamp")))))))
                ),
            )
        ),
    ),
    field("p", "integer"),
)
BASE_PARTITIONS = ("p",)


def metadata(
    schema: dict, configuration: dict | None = None, partitions: Iterable[str] = (), table_id: str = "t-1"
) -> Metadata:
    return Metadata(
        schema_string="{}",
        partition_columns=tuple(partitions),
        configuration=dict(configuration or {}),
        id=table_id,
    ).with_schema(parse_schema(schema))


def compliant(
    profile: str, schema: dict | None = None, partitions: Iterable[str] | None = None
) -> TableState:
    """A table state that complies with ``profile``, made by the planner from a bare schema."""
    s = copy.deepcopy(BASE_SCHEMA if schema is None else schema)
    parts = BASE_PARTITIONS if partitions is None and schema is None else tuple(partitions or ())
    p = plan(profile, metadata(s, partitions=parts))
    return TableState(p.protocol, p.metadata, 0)


# --- editing states ----------------------------------------------------------------------------------


def with_config(state: TableState, set_: dict | None = None, drop: Iterable[str] = ()) -> TableState:
    cfg = dict(state.metadata.configuration)
    cfg.update(set_ or {})
    for k in drop:
        cfg.pop(k, None)
    return replace(state, metadata=replace(state.metadata, configuration=MappingProxyType(cfg)))


def with_features(
    state: TableState,
    add_writer: Iterable[str] = (),
    add_reader: Iterable[str] = (),
    drop: Iterable[str] = (),
) -> TableState:
    p = state.protocol
    w = set(p.writer_features or ()) | set(add_writer)
    r = set(p.reader_features or ()) | set(add_reader)
    for f in drop:
        w.discard(f)
        r.discard(f)
    return replace(state, protocol=replace(p, writer_features=frozenset(w), reader_features=frozenset(r)))


def with_protocol(state: TableState, **changes: Any) -> TableState:
    return replace(state, protocol=replace(state.protocol, **changes))


def with_schema(state: TableState, edit: Callable[[dict], Any]) -> TableState:
    s = json.loads(state.metadata.schema_string)
    edit(s)
    return replace(state, metadata=state.metadata.with_schema(parse_schema(s)))


def find(schema: dict, path: str) -> dict:
    """The struct field at ``path``: names separated by ``/``; ``element``/``key``/``value`` step into
    an array or map type (so names with dots need no quoting here)."""
    t: Any = schema
    current: dict | None = None
    steps = {"element": "elementType", "key": "keyType", "value": "valueType"}
    for part in path.split("/"):
        if part in steps and isinstance(t, dict) and t.get("type") in ("array", "map"):
            t = t[steps[part]]
            continue
        current = next(f for f in t["fields"] if f["name"] == part)
        t = current["type"]
    assert current is not None
    return current


def meta(schema: dict, path: str) -> dict:
    return find(schema, path)["metadata"]


# --- data files ----------------------------------------------------------------------------------------


def _pf(name: str, fid: int | None, t: Any, ids: dict, key: str) -> ParquetField:
    """A Parquet node for Delta type ``t`` as Spark writes it (3-level lists, key_value maps)."""
    cat = type_category(t)
    if cat == "struct":
        return ParquetField(name, fid, None, None, "OPTIONAL", tuple(_field_node(f) for f in t["fields"]))
    if cat == "array":
        k = key + ".element"
        element = _pf("element", ids.get(k), t["elementType"], ids, k)
        return ParquetField(
            name,
            fid,
            None,
            "LIST",
            "OPTIONAL",
            (ParquetField("list", None, None, None, "REPEATED", (element,)),),
        )
    if cat == "map":
        kk, kv = key + ".key", key + ".value"
        kn = _pf("key", ids.get(kk), t["keyType"], ids, kk)
        vn = _pf("value", ids.get(kv), t["valueType"], ids, kv)
        return ParquetField(
            name,
            fid,
            None,
            "MAP",
            "OPTIONAL",
            (ParquetField("key_value", None, None, None, "REPEATED", (kn, vn)),),
        )
    physical = {
        "long": "INT64", "integer": "INT32", "date": "INT32", "timestamp": "INT64", "timestamp_ntz": "INT64",
        "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "byte": "INT32", "short": "INT32",
    }.get(t, "BYTE_ARRAY")  # fmt: skip
    logical = "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds)" if t == "timestamp" else None
    return ParquetField(name, fid, physical, logical, "OPTIONAL")


def _field_node(f: dict) -> ParquetField:
    md = f.get("metadata", {})
    pn = md.get(CM_PHYSICAL_NAME, f["name"])
    return _pf(pn, md.get(CM_ID), f["type"], md.get(CM_NESTED_IDS, {}), pn)


def footer_for(md: Metadata, extra: Iterable[ParquetField] = ()) -> ParquetFooter:
    """The footer a correct writer produces for ``md``: physical names, every field id, partition columns."""
    fields = tuple(_field_node(f) for f in json.loads(md.schema_string)["fields"])
    return ParquetFooter(num_rows=10, fields=(*fields, *extra))


def good_file(md: Metadata, path: str = "part-0.parquet", **changes: Any) -> DataFileFacts:
    facts = DataFileFacts(
        path=path,
        num_records=10,
        has_stats=True,
        base_row_id=0,
        default_row_commit_version=1,
        footer=footer_for(md),
    )
    return replace(facts, **changes)


def edit_footer(
    footer: ParquetFooter, path: list[str], change: Callable[[ParquetField], ParquetField]
) -> ParquetFooter:
    """Replace the node reached by child names ``path`` with ``change(node)``."""

    def rec(nodes: tuple[ParquetField, ...], rest: list[str]) -> tuple[ParquetField, ...]:
        out = []
        for n in nodes:
            if n.name == rest[0]:
                n = change(n) if len(rest) == 1 else replace(n, children=rec(n.children, rest[1:]))
            out.append(n)
        return tuple(out)

    return replace(footer, fields=rec(footer.fields, path))


def drop_from_footer(footer: ParquetFooter, name: str) -> ParquetFooter:
    return replace(footer, fields=tuple(f for f in footer.fields if f.name != name))


def physical_of(md: Metadata, path: str) -> str:
    return meta(json.loads(md.schema_string), path)[CM_PHYSICAL_NAME]


def id_of(md: Metadata, path: str) -> int:
    return meta(json.loads(md.schema_string), path)[CM_ID]


def rules_of(violations: Iterable[Any]) -> set[str]:
    return {v.rule for v in violations}


def bare_protocol() -> Protocol:
    return Protocol(1, 1)


@contextmanager
def raises_exactly(exc: type[BaseException], match: str | None = None) -> Iterator[pytest.ExceptionInfo]:
    """``pytest.raises`` that also refuses subclasses: the error type is part of the API."""
    with pytest.raises(exc, match=match) as info:
        yield info
    assert type(info.value) is exc, f"expected exactly {exc.__name__}, got {type(info.value).__name__}"
