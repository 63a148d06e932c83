"""Delta type names: categories for allow-lists, decimal parameters, short forms for messages.

A type in Delta's schema JSON is either a string (a primitive such as ``integer`` or
``decimal(10,2)``) or an object whose ``type`` is ``struct``, ``array`` or ``map``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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


def type_text(t: Any) -> str:
    """A short human form of a type for messages: primitives verbatim, complex types by their kind."""
    if isinstance(t, str):
        return t
    cat = type_category(t)
    if cat == "array":
        return f"array<{type_text(t.get('elementType'))}>"
    if cat == "map":
        return f"map<{type_text(t.get('keyType'))}, {type_text(t.get('valueType'))}>"
    if cat == "struct":
        inner = ", ".join(
            f"{quote_name(str(f.get('name', '')))}: {type_text(f.get('type'))}"
            for f in t.get("fields") or ()
            if isinstance(f, Mapping)
        )
        return f"struct<{inner}>"
    return cat


def type_shape(t: Any) -> Any:
    """A type with all field metadata dropped: names, nullability and nested types only.

    Used to decide whether a schema "changed" where ids and comments do not count (map keys).
    """
    cat = type_category(t)
    if cat == "struct":
        return (
            "struct",
            tuple(
                (str(f.get("name", "")), bool(f.get("nullable", True)), type_shape(f.get("type")))
                for f in t.get("fields") or ()
                if isinstance(f, Mapping)
            ),
        )
    if cat == "array":
        return ("array", bool(t.get("containsNull", True)), type_shape(t.get("elementType")))
    if cat == "map":
        return (
            "map",
            type_shape(t.get("keyType")),
            type_shape(t.get("valueType")),
            bool(t.get("valueContainsNull", True)),
        )
    return t if isinstance(t, str) else cat


def contains_struct(t: Any) -> bool:
    """Whether a struct appears anywhere in ``t`` (itself, or below arrays and maps)."""
    cat = type_category(t)
    if cat == "struct":
        return True
    if cat == "array":
        return contains_struct(t.get("elementType"))
    if cat == "map":
        return contains_struct(t.get("keyType")) or contains_struct(t.get("valueType"))
    return False
