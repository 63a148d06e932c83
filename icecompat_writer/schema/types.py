"""Delta type names: categories for allow-lists, decimal parameters, short forms for messages.

A type in Delta's schema JSON is either a string (a primitive such as ``integer`` or
``decimal(10,2)``) or an object whose ``type`` is ``struct``, ``array`` or ``map``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from icecompat_writer.schema.paths import quote_name

__all__ = [
    "COMPLEX",
    "SIMPLE",
    "contains_struct",
    "decimal_params",
    "iceberg_decimal_params",
    "type_category",
    "type_shape",
    "type_text",
]

COMPLEX = frozenset({"struct", "array", "map"})

# Primitive names whose category is the name itself (skips type_category's prefix tests).
SIMPLE = frozenset(
    {
        "byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean", "date",
        "timestamp", "timestamp_ntz", "variant", "void",
    }
)  # fmt: skip

# Delta writes decimal(P,S) with 0 <= S <= P; Iceberg type strings may carry a negative scale
# (iceberg-spec.md "Primitive Types" does not forbid it and the Avro decimal logical type allows it).
_DELTA_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_ICEBERG_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")


def decimal_params(t: object) -> tuple[int, int] | None:
    """``(precision, scale)`` of a Delta ``decimal(P,S)`` type (surrounding blanks allowed), else None."""
    m = _DELTA_DECIMAL.fullmatch(t.strip()) if isinstance(t, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def iceberg_decimal_params(iceberg_type: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of an Iceberg ``decimal(P, S)`` type string (negative scale allowed)."""
    m = _ICEBERG_DECIMAL.match(iceberg_type)
    return (int(m.group(1)), int(m.group(2))) if m else None


def type_category(t: object) -> str:
    """The allow-list name of a Delta type: ``decimal(10,2)`` -> ``decimal``, a struct -> ``struct``.

    Primitive names are Delta's own (``integer``, ``timestamp_ntz``, ``variant``, ...). Anything not
    recognisable comes back as its text so that allow-lists refuse it instead of crashing on it.
    """
    if isinstance(t, str):
        if t in SIMPLE:  # most leaves: one set lookup instead of three prefix tests
            return t
        if t.startswith("decimal"):
            return "decimal"
        if t.startswith("geometry"):
            return "geometry"
        if t.startswith("geography"):
            return "geography"
        return t
    if type(t) is dict or isinstance(t, Mapping):
        inner = t.get("type")
        if isinstance(inner, str):
            return inner if inner in COMPLEX else type_category(inner)
    return "unknown"


def _get(t: object, key: str) -> object:
    """``t[key]`` of a JSON object, None for anything else (a type of a damaged log)."""
    return t.get(key) if isinstance(t, Mapping) else None


def _fields(t: object) -> list[Mapping[str, object]]:
    """The JSON objects among a struct's ``fields`` (none when they are not a list)."""
    fs = _get(t, "fields")
    return [f for f in fs if isinstance(f, Mapping)] if isinstance(fs, list | tuple) else []


def type_text(t: object) -> str:
    """A short human form of a type for messages: primitives verbatim, complex types by their kind."""
    if isinstance(t, str):
        return t
    cat = type_category(t)
    if cat == "array":
        return f"array<{type_text(_get(t, 'elementType'))}>"
    if cat == "map":
        return f"map<{type_text(_get(t, 'keyType'))}, {type_text(_get(t, 'valueType'))}>"
    if cat == "struct":
        inner = ", ".join(
            f"{quote_name(str(f.get('name', '')))}: {type_text(f.get('type'))}" for f in _fields(t)
        )
        return f"struct<{inner}>"
    return cat


def type_shape(t: object) -> object:
    """A type with all field metadata dropped: names, nullability and nested types only.

    Used to decide whether a schema "changed" where ids and comments do not count (map keys).
    """
    cat = type_category(t)
    if cat == "struct":
        return (
            "struct",
            tuple(
                (str(f.get("name", "")), bool(f.get("nullable", True)), type_shape(f.get("type")))
                for f in _fields(t)
            ),
        )
    if cat == "array":
        contains_null = bool(t.get("containsNull", True)) if isinstance(t, Mapping) else True
        return ("array", contains_null, type_shape(_get(t, "elementType")))
    if cat == "map":
        return (
            "map",
            type_shape(_get(t, "keyType")),
            type_shape(_get(t, "valueType")),
            bool(t.get("valueContainsNull", True)) if isinstance(t, Mapping) else True,
        )
    return t if isinstance(t, str) else cat


def contains_struct(t: object) -> bool:
    """Whether a struct appears anywhere in ``t`` (itself, or below arrays and maps)."""
    cat = type_category(t)
    if cat == "struct":
        return True
    if cat == "array":
        return contains_struct(_get(t, "elementType"))
    if cat == "map":
        return contains_struct(_get(t, "keyType")) or contains_struct(_get(t, "valueType"))
    return False
