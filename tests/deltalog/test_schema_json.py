"""``schema_json``: the ``schemaString`` text the planner commits, fast and the same as ``json`` writes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from icecompat_writer.deltalog.actions import Metadata, schema_json
from icecompat_writer.schema import parse_schema
from tests.planning.test_properties import any_schema

# JSON values as field metadata may hold them: text of any kind, 64-bit integers, finite floats.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def stdlib(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@settings(max_examples=200, deadline=None)
@given(schema=any_schema, extra=json_values)
def test_same_text_as_the_standard_library(schema: dict, extra: Any) -> None:
    schema["fields"][0]["metadata"] = {"comment": extra}
    text = schema_json(parse_schema(schema))
    assert json.loads(text) == json.loads(stdlib(schema))
    if not has_float(extra):
        assert text == stdlib(schema)  # byte for byte; floats may spell exponents differently (1e-7)


def has_float(v: Any) -> bool:
    if isinstance(v, float):
        return True
    if isinstance(v, list):
        return any(has_float(x) for x in v)
    if isinstance(v, dict):
        return any(has_float(x) for x in v.values())
    return False


def test_what_orjson_cannot_write_goes_through_json() -> None:
    huge = {"fields": [{"name": "a", "metadata": {"big": 2**70}}], "type": "struct"}
    assert schema_json(parse_schema(huge)) == stdlib(huge)
    assert json.loads(schema_json(parse_schema(huge)))["fields"][0]["metadata"]["big"] == 2**70
    odd_keys = {"fields": [], "type": "struct", 1: "x"}
    assert schema_json(parse_schema(odd_keys)) == stdlib(odd_keys)


def test_non_finite_floats_become_null_not_the_token_nan() -> None:
    odd = {"x": float("nan"), "y": float("-inf")}
    s = {"type": "struct", "fields": [{"name": "a", "type": "double", "metadata": odd}]}
    text = schema_json(parse_schema(s))
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["fields"][0]["metadata"] == {"x": None, "y": None}
    assert Metadata(schema_string="{}").with_schema(parse_schema(s)).schema_string == text
