"""Property-based tests on generated Delta schemas: whatever the input, ``plan`` either produces a state
``validate`` accepts or refuses with rule ids; planning is idempotent; ids are unique, below Iceberg's
reserved range, and stable when columns are added later."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from icecompat_writer.deltalog.actions import Metadata, TableState
from icecompat_writer.errors import CompatViolation
from icecompat_writer.planning import plan, validate
from icecompat_writer.rules import RULES_BY_ID, Scope
from icecompat_writer.rules.schema import (
    CM_ID,
    CM_NESTED_IDS,
    CM_PHYSICAL_NAME,
    cached_index,
    clear_index_cache,
    index_schema,
)
from tests.rules.builders import PROFILES, metadata

NON_FILE = {Scope.PROTOCOL, Scope.METADATA, Scope.SCHEMA, Scope.REPLACE}
ODD_NAMES = [
    "a",
    "b",
    "Col",
    "col",
    "x.y",
    "with space",
    "ünï",
    "q`uote",
    "element",
    "key",
    "value",
    "",
    "列",
]
PRIMITIVES = [
    "byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean", "date",
    "timestamp", "timestamp_ntz", "decimal(10,2)", "variant", "void",
]  # fmt: skip
COMMON = ["integer", "long", "string", "double", "date", "timestamp", "decimal(38,0)", "boolean"]

names = st.one_of(st.sampled_from(ODD_NAMES), st.text(max_size=6))


def fields_of(types: st.SearchStrategy[Any], metas: st.SearchStrategy[dict]) -> st.SearchStrategy[list[dict]]:
    f = st.builds(
        lambda n, t, m, nl: {"name": n, "type": t, "nullable": nl, "metadata": m},
        names,
        types,
        metas,
        st.booleans(),
    )
    return st.lists(f, min_size=1, max_size=4, unique_by=lambda x: x["name"].casefold())


def delta_types(primitives: list[str], metas: st.SearchStrategy[dict]) -> st.SearchStrategy[Any]:
    return st.recursive(
        st.sampled_from(primitives),
        lambda inner: st.one_of(
            st.builds(lambda fs: {"type": "struct", "fields": fs}, fields_of(inner, metas)),
            st.builds(
                lambda e, n: {"type": "array", "elementType": e, "containsNull": n}, inner, st.booleans()
            ),
            st.builds(
                lambda k, v, n: {"type": "map", "keyType": k, "valueType": v, "valueContainsNull": n},
                inner,
                inner,
                st.booleans(),
            ),
        ),
        max_leaves=12,
    )


# Mostly bare fields (a DataFrame schema), sometimes with column mapping metadata or legacy features.
odd_meta = st.one_of(
    st.just({}),
    st.just({}),
    st.just({}),
    st.builds(lambda i: {CM_ID: i, CM_PHYSICAL_NAME: f"col-{i}"}, st.integers(1, 60)),
    st.builds(
        lambda i, p: {CM_ID: i, CM_PHYSICAL_NAME: p}, st.integers(1, 60), st.sampled_from(["phys", "col-x"])
    ),
    st.sampled_from(
        [{"comment": "c"}, {"delta.invariants": "{}"}, {"CURRENT_DEFAULT": "1"}, {"CURRENT_DEFAULT": "now()"}]
    ),
)
any_schema = st.builds(
    lambda fs: {"type": "struct", "fields": fs}, fields_of(delta_types(PRIMITIVES, odd_meta), odd_meta)
)
bare_schema = st.builds(
    lambda fs: {"type": "struct", "fields": fs}, fields_of(delta_types(COMMON, st.just({})), st.just({}))
)
configs = st.dictionaries(
    st.sampled_from(
        [
            "delta.enableChangeDataFeed",
            "delta.enableDeletionVectors",
            "delta.enableRowTracking",
            "delta.columnMapping.mode",
            "delta.enableIcebergCompatV2",
            "delta.appendOnly",
        ]
    ),
    st.sampled_from(["true", "false", "id", "name"]),
    max_size=2,
)

# Many generated schemas are refused (and filtered out by the idempotence tests): a run where the
# refusals come in a streak is not a broken strategy, and Unsatisfiable still fails a run with none left.
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def all_ids(md: Metadata) -> list[int]:
    idx = index_schema(json.loads(md.schema_string))
    return [i for i, _ in idx.all_ids()]


def strip_mapping(t: Any) -> Any:
    """The schema a DataFrame would have: no column mapping metadata anywhere."""
    if isinstance(t, dict) and t.get("type") == "struct":
        return {"type": "struct", "fields": [
            {**f, "type": strip_mapping(f["type"]), "metadata": {}} for f in t["fields"]
        ]}  # fmt: skip
    if isinstance(t, dict) and t.get("type") == "array":
        return {**t, "elementType": strip_mapping(t["elementType"])}
    if isinstance(t, dict) and t.get("type") == "map":
        return {**t, "keyType": strip_mapping(t["keyType"]), "valueType": strip_mapping(t["valueType"])}
    return t


@SETTINGS
@given(profile=st.sampled_from(PROFILES), schema=any_schema, config=configs)
def test_plan_is_valid_or_refuses_with_rule_ids(profile: str, schema: dict, config: dict) -> None:
    md = metadata(schema, config)
    try:
        p = plan(profile, md)
    except CompatViolation as err:
        assert type(err) is CompatViolation
        assert err.violations, "a refusal lists at least one violation"
        assert all(r in RULES_BY_ID for r in err.rules)
        event("refused")
        return
    event("planned")
    assert validate(profile, p.metadata, p.protocol, scopes=NON_FILE) == []
    ids = all_ids(p.metadata)
    assert len(ids) == len(set(ids))
    assert all(0 < i <= 2147483447 < 2**31 for i in ids)


@SETTINGS
@given(profile=st.sampled_from(PROFILES), schema=any_schema, config=configs)
def test_plan_is_idempotent(profile: str, schema: dict, config: dict) -> None:
    try:
        p = plan(profile, metadata(schema, config))
    except CompatViolation:
        assume(False)
        return
    again = plan(profile, p.metadata, p.protocol)
    assert again.changes == ()
    assert again.metadata == p.metadata and again.protocol == p.protocol
    as_previous = plan(profile, p.metadata, p.protocol, TableState(p.protocol, p.metadata, 0))
    assert as_previous.changes == ()


@SETTINGS
@given(
    profile=st.sampled_from(PROFILES),
    schema=bare_schema,
    added=fields_of(delta_types(COMMON, st.just({})), st.just({})),
)
def test_ids_are_stable_when_columns_are_added(profile: str, schema: dict, added: list[dict]) -> None:
    first = plan(profile, metadata(schema))
    before = json.loads(first.metadata.schema_string)
    taken = {f["name"].casefold() for f in before["fields"]}
    extra = [f for f in added if f["name"].casefold() not in taken]
    assume(extra)
    dataframe = strip_mapping(before)
    dataframe["fields"].extend(extra)
    prev = TableState(first.protocol, first.metadata, 0)
    second = plan(profile, metadata(dataframe, dict(first.metadata.configuration)), None, prev)
    after = json.loads(second.metadata.schema_string)

    old_max = max(all_ids(first.metadata))
    kept = after["fields"][: len(before["fields"])]
    assert strip_nothing(kept) == strip_nothing(before["fields"])  # every old id, name and nested id kept
    new_ids = set(all_ids(second.metadata)) - set(all_ids(first.metadata))
    assert new_ids and min(new_ids) > old_max
    ids = all_ids(second.metadata)
    assert len(ids) == len(set(ids))
    assert validate(profile, second.metadata, second.protocol, prev) == []


def strip_nothing(fields: list[dict]) -> list[tuple]:
    """The mapping-relevant part of fields, recursively: (name, id, physical name, nested ids)."""
    out = []
    for f in fields:
        md = f["metadata"]
        out.append(
            (
                f["name"],
                md.get(CM_ID),
                md.get(CM_PHYSICAL_NAME),
                json.dumps(md.get(CM_NESTED_IDS), sort_keys=True),
                _inner(f["type"]),
            )
        )
    return out


def _inner(t: Any) -> Any:
    if isinstance(t, dict) and t.get("type") == "struct":
        return strip_nothing(t["fields"])
    if isinstance(t, dict) and t.get("type") == "array":
        return ("array", _inner(t["elementType"]))
    if isinstance(t, dict) and t.get("type") == "map":
        return ("map", _inner(t["keyType"]), _inner(t["valueType"]))
    return t


def index_summary(idx: Any) -> tuple:
    """Everything a rule can read from an index, as plain values (nodes compare by identity)."""
    return (
        [
            (
                f.path,
                f.name,
                f.column_id,
                f.physical_name,
                f.parent.path if f.parent else None,
                dict(f.metadata),
            )
            for f in idx.fields
        ],
        [(s.path, s.key, s.owner.path, json.dumps(s.type)) for s in idx.slots],
        [f.path for f in idx.top],
        idx.categories,
        idx.metadata_keys,
    )


@SETTINGS
@given(profile=st.sampled_from(PROFILES), schema=any_schema, config=configs)
def test_the_planners_index_equals_a_fresh_walk_of_what_it_commits(
    profile: str, schema: dict, config: dict
) -> None:
    """The planner indexes its result from the walk it made before fixing ids (no second walk); what
    rules then read must be exactly what a walk of the committed ``schemaString`` gives."""
    clear_index_cache()
    try:
        p = plan(profile, metadata(schema, config))
    except CompatViolation:
        assume(False)
        return
    remembered = cached_index(p.metadata.schema_string)
    assert remembered is not None
    assert index_summary(remembered) == index_summary(index_schema(json.loads(p.metadata.schema_string)))
