"""plan(): compliant protocol + metadata from a bare or existing state, or CompatViolation with every
unfixable problem."""

from __future__ import annotations

import gc
import json
from dataclasses import replace

import pytest

from icecompat_writer.deltalog.actions import Metadata, Protocol, TableState
from icecompat_writer.errors import CompatViolation
from icecompat_writer.planning import Change, Plan, UnknownProfileError, plan, validate
from icecompat_writer.rules.schema import CM_ID, CM_NESTED_IDS, CM_PHYSICAL_NAME, clear_index_cache
from tests.rules.builders import (
    BASE_SCHEMA,
    PROFILES,
    array,
    compliant,
    field,
    find,
    map_,
    mapped,
    meta,
    metadata,
    raises_exactly,
    struct,
    with_config,
    with_schema,
)


def schema_of(md: Metadata) -> dict:
    return json.loads(md.schema_string)


def state(p: Plan) -> TableState:
    return TableState(p.protocol, p.metadata, 0)


@pytest.mark.parametrize("profile", PROFILES)
def test_new_table_is_planned_compliant(profile: str) -> None:
    p = plan(profile, metadata(BASE_SCHEMA, partitions=("p",)))
    assert validate(profile, p.metadata, p.protocol) == []
    assert p.metadata.configuration["delta.columnMapping.mode"] == "id"
    assert p.protocol.min_reader_version == 3 and p.protocol.min_writer_version == 7
    assert "columnMapping" in p.protocol.reader_features
    assert p.changed and all(isinstance(c, Change) and c.rule and c.why for c in p.changes)
    for f in _all_fields(schema_of(p.metadata)):
        assert f["metadata"][CM_PHYSICAL_NAME] == f"col-{f['metadata'][CM_ID]}"


def _all_fields(schema: dict) -> list[dict]:
    out: list[dict] = []

    def walk(t: object) -> None:
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                out.append(f)
                walk(f["type"])
        elif isinstance(t, dict) and t.get("type") == "array":
            walk(t["elementType"])
        elif isinstance(t, dict) and t.get("type") == "map":
            walk(t["keyType"])
            walk(t["valueType"])

    walk(schema)
    return out


def test_nested_ids_are_stored_as_protocol_md_shows() -> None:
    # PROTOCOL.md "Example of storing identifiers for nested fields in ArrayType and MapType".
    s = struct(
        field("col1", array(array("integer"))),
        field("col2", map_("integer", array("integer"))),
        field("col3", map_("integer", struct(field("subcol1", array("integer"))))),
    )
    out = schema_of(plan("writer-v1", metadata(s)).metadata)
    # Delta Kernel's order: every column id first (pre-order), then nested ids (pre-order).
    assert [meta(out, p)[CM_ID] for p in ("col1", "col2", "col3", "col3/value/subcol1")] == [1, 2, 3, 4]
    assert meta(out, "col1")[CM_NESTED_IDS] == {"col-1.element": 5, "col-1.element.element": 6}
    assert meta(out, "col2")[CM_NESTED_IDS] == {"col-2.key": 7, "col-2.value": 8, "col-2.value.element": 9}
    assert meta(out, "col3")[CM_NESTED_IDS] == {"col-3.key": 10, "col-3.value": 11}
    assert meta(out, "col3/value/subcol1")[CM_NESTED_IDS] == {"col-4.element": 12}


def test_struct_inside_a_map_key_gets_its_nested_ids_in_kernel_order() -> None:
    s = struct(field("m", map_(struct(field("ks", array("long"))), array("long"))))
    out = schema_of(plan("v3", metadata(s)).metadata)
    assert meta(out, "m")[CM_NESTED_IDS] == {"col-1.key": 3, "col-1.value": 5, "col-1.value.element": 6}
    assert meta(out, "m/key/ks")[CM_NESTED_IDS] == {"col-2.element": 4}


@pytest.mark.parametrize("profile", PROFILES)
def test_planning_a_compliant_table_changes_nothing(profile: str) -> None:
    s = compliant(profile)
    again = plan(profile, s.metadata, s.protocol, s)
    assert again.metadata is s.metadata and again.protocol is s.protocol and again.changes == ()
    fresh = plan(profile, s.metadata, s.protocol)
    assert fresh.metadata is s.metadata and fresh.changes == ()


def test_new_columns_continue_after_max_column_id_and_existing_ones_keep_theirs() -> None:
    prev = with_config(compliant("writer-v1"), {"delta.columnMapping.maxColumnId": "500"})
    old_ids = {f["name"]: f["metadata"][CM_ID] for f in schema_of(prev.metadata)["fields"]}
    bare = json.loads(json.dumps(BASE_SCHEMA))  # a DataFrame schema: no column mapping metadata
    bare["fields"].append(field("added", struct(field("inner", array("long")))))
    p = plan("writer-v1", metadata(bare, dict(prev.metadata.configuration), ("p",)), None, prev)
    out = schema_of(p.metadata)
    assert {f["name"]: f["metadata"][CM_ID] for f in out["fields"] if f["name"] in old_ids} == old_ids
    assert meta(out, "added")[CM_ID] == 501 and meta(out, "added/inner")[CM_ID] == 502
    assert meta(out, "added/inner")[CM_NESTED_IDS] == {"col-502.element": 503}
    assert p.metadata.configuration["delta.columnMapping.maxColumnId"] == "503"
    assert meta(out, "m")[CM_NESTED_IDS] == meta(schema_of(prev.metadata), "m")[CM_NESTED_IDS]
    assert {c.rule for c in p.changes} >= {"CM-PHYSICAL-NAMES-STABLE", "CM-IDS-ASSIGNED", "CM-MAX-COLUMN-ID"}
    assert p.protocol is prev.protocol
    assert validate("writer-v1", p.metadata, p.protocol, prev) == []


def test_names_match_exactly_first_then_case_insensitively() -> None:
    prev = compliant("v3", struct(field("Col", "long"), field("x", "string")))
    new = struct(field("col", "long"), field("X", "string"), field("new", "date"))
    p = plan("v3", metadata(new, dict(prev.metadata.configuration)), None, prev)
    out = schema_of(p.metadata)
    before = schema_of(prev.metadata)
    assert meta(out, "col")[CM_ID] == meta(before, "Col")[CM_ID]
    assert meta(out, "X")[CM_PHYSICAL_NAME] == meta(before, "x")[CM_PHYSICAL_NAME]
    assert meta(out, "new")[CM_ID] == 3


def test_v3_keeps_an_existing_name_mode_table_and_its_physical_names() -> None:
    cfg = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "2"}
    s = struct(field("a", "long", mapped(1, "col-5f422f40")), field("b", "string", mapped(2, "b")))
    prev = TableState(Protocol(2, 5), metadata(s, cfg), 3)
    bare = struct(field("a", "long"), field("b", "string"), field("c", "date"))
    p = plan("v3", metadata(bare, cfg), None, prev)
    out = schema_of(p.metadata)
    assert p.metadata.configuration["delta.columnMapping.mode"] == "name"
    assert [meta(out, n)[CM_PHYSICAL_NAME] for n in "abc"] == ["col-5f422f40", "b", "col-3"]
    # reader version 2 implies column mapping; writer 5 -> 7 lists what version 5 implied
    assert p.protocol.min_reader_version == 2 and p.protocol.reader_features is None
    assert {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
    } <= p.protocol.writer_features


def test_v3_upgrades_a_table_without_column_mapping_to_name_mode() -> None:
    prev = TableState(
        Protocol(1, 2), metadata(struct(field("Id", "long"), field("s", struct(field("x", "long"))))), 4
    )
    p = plan("v3", metadata(struct(field("id", "long"), field("s", struct(field("x", "long"))))), None, prev)
    out = schema_of(p.metadata)
    assert p.metadata.configuration["delta.columnMapping.mode"] == "name"
    assert meta(out, "id")[CM_PHYSICAL_NAME] == "Id"  # the name its data files use
    assert meta(out, "s/x")[CM_PHYSICAL_NAME] == "x"
    assert p.protocol.writer_features >= {"appendOnly", "invariants"}
    assert any(c.what == "listed writer feature invariants (implied by writer version 2)" for c in p.changes)


@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_writer_profiles_refuse_in_place_column_mapping_upgrades(profile: str) -> None:
    prev = TableState(Protocol(1, 2), metadata(struct(field("id", "long"))), 4)
    with raises_exactly(CompatViolation) as err:
        plan(profile, metadata(struct(field("id", "long"))), None, prev)
    assert "CM-MODE-CHANGE" in err.value.rules


@pytest.mark.parametrize("profile", ["writer-v1", "writer-v3"])
def test_writer_profiles_refuse_existing_non_col_id_physical_names(profile: str) -> None:
    cfg = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "1"}
    prev = TableState(Protocol(2, 5), metadata(struct(field("a", "long", mapped(1, "col-a7f4159c"))), cfg), 1)
    with raises_exactly(CompatViolation) as err:
        plan(profile, metadata(struct(field("a", "long")), cfg), None, prev)
    assert err.value.rules == ["IWC1-PHYSICAL-NAME"]
    (v,) = err.value.violations
    assert v.path == "a" and v.observed == "col-a7f4159c" and "icecompat upgrade" in v.fix


def test_writer_profile_renames_physical_names_of_new_columns_only() -> None:
    given = struct(field("a", "long", mapped(7, "uuid-like")))
    p = plan("writer-v3", metadata(given))
    assert meta(schema_of(p.metadata), "a") == {CM_ID: 7, CM_PHYSICAL_NAME: "col-7"}
    assert [c.rule for c in p.changes if c.path == "a"] == ["IWC1-PHYSICAL-NAME"]
    v3 = plan("v3", metadata(given))
    assert meta(schema_of(v3.metadata), "a")[CM_PHYSICAL_NAME] == "uuid-like"


def test_explicit_contrary_properties_are_refused_not_overridden() -> None:
    md = metadata(
        struct(field("a", "long")), {"delta.enableRowTracking": "false", "delta.columnMapping.mode": "name"}
    )
    with raises_exactly(CompatViolation) as err:
        plan("writer-v3", md)
    assert err.value.rules == ["ICV3-ROW-TRACKING", "IWC1-ID-MODE"]


def test_every_unfixable_violation_is_raised_at_once() -> None:
    s = struct(field("b", "byte"), field("v", "variant"), field("n", "void"))
    md = metadata(s, {"delta.enableChangeDataFeed": "true", "delta.constraints.c": "b > 0"})
    with raises_exactly(CompatViolation) as err:
        plan("writer-v1", md, Protocol(3, 7, frozenset({"deletionVectors"}), frozenset({"deletionVectors"})))
    assert set(err.value.rules) == {
        "ICV2-TYPE-ALLOWLIST",
        "IWC1-NO-BYTE-SHORT",
        "IWC1-NO-CHANGE-DATA-FEED",
        "IWC1-NO-CHECK-CONSTRAINTS",
        "IWC1-FEATURE-ALLOWLIST",
    }
    assert "planning profile writer-v1" in str(err.value)


def test_mixing_profiles_is_refused() -> None:
    md = metadata(struct(field("a", "long")), {"delta.enableIcebergWriterCompatV1": "true"})
    with raises_exactly(CompatViolation) as err:
        plan("writer-v3", md)
    assert err.value.rules == ["PROFILE-EXCLUSIVE"]
    assert "writer-v1" in err.value.violations[0].fix
    with raises_exactly(CompatViolation) as err2:
        plan("v3", metadata(struct(field("a", "long")), {"delta.enableIcebergCompatV2": "true"}))
    assert err2.value.rules == ["ICV3-NO-OLDER-COMPAT"]


def test_partition_rename_on_replace_is_refused_but_a_type_change_is_not() -> None:
    prev = compliant("v3")
    bare = json.loads(json.dumps(BASE_SCHEMA))
    with raises_exactly(CompatViolation) as err:
        plan("v3", metadata(bare, dict(prev.metadata.configuration), ("id",)), None, prev)
    assert err.value.rules == ["ICV3-NO-PARTITION-RENAME"]
    find(bare, "p")["type"] = "long"
    p = plan("v3", metadata(bare, dict(prev.metadata.configuration), ("p",)), None, prev)
    assert meta(schema_of(p.metadata), "p")[CM_ID] == meta(schema_of(prev.metadata), "p")[CM_ID]


def test_map_key_struct_change_is_refused_for_writer_profiles() -> None:
    prev = compliant("writer-v1")
    bare = json.loads(json.dumps(BASE_SCHEMA))
    find(bare, "m")["type"]["keyType"]["fields"].append(field("k3", "long"))
    with raises_exactly(CompatViolation) as err:
        plan("writer-v1", metadata(bare, dict(prev.metadata.configuration), ("p",)), None, prev)
    assert err.value.rules == ["IWC1-MAP-KEY-IMMUTABLE"]
    assert err.value.violations[0].path == "m.key"


def test_features_required_by_the_schema_are_added() -> None:
    defaulted = field("n", "integer", {"CURRENT_DEFAULT": "0"})
    s = struct(field("t", "timestamp_ntz"), field("v", "variant"), defaulted)
    p = plan("writer-v3", metadata(s))
    assert {"timestampNtz", "variantType", "allowColumnDefaults"} <= p.protocol.writer_features
    assert {"timestampNtz", "variantType"} <= p.protocol.reader_features
    assert "allowColumnDefaults" not in p.protocol.reader_features


def test_existing_features_are_kept_and_new_protocol_defaults_to_previous() -> None:
    prev = compliant("v3")
    prev = replace(
        prev, protocol=replace(prev.protocol, writer_features=prev.protocol.writer_features | {"appendOnly"})
    )
    p = plan("v3", prev.metadata, None, prev)
    assert p.protocol is prev.protocol


def test_plan_result_can_be_the_next_previous() -> None:
    first = plan("v3", metadata(struct(field("a", "long"))))
    bare = struct(field("a", "long"), field("b", array("long")))
    second = plan("v3", metadata(bare, dict(first.metadata.configuration)), None, first)
    out = schema_of(second.metadata)
    assert (
        meta(out, "a")[CM_ID] == 1
        and meta(out, "b")[CM_ID] == 2
        and meta(out, "b")[CM_NESTED_IDS] == {"col-2.element": 3}
    )


def test_unknown_profile_raises_its_own_error() -> None:
    with raises_exactly(UnknownProfileError):
        plan("v2", metadata(struct()))


def test_edited_previous_schema_is_not_mutated_by_planning() -> None:
    prev = compliant("v3")
    before = prev.metadata.schema_string
    bare = with_schema(prev, lambda sc: sc["fields"].append(field("z", "long")))
    plan("v3", bare.metadata, None, prev)
    assert prev.metadata.schema_string == before


def test_change_data_feed_blocks_turning_column_mapping_on_with_a_write() -> None:
    """delta-spark refuses a commit with data files that turns column mapping on while change data feed
    is on; the plan of such a write says so first, with the commit of its own as the fix."""
    cfg = {"delta.enableChangeDataFeed": "true"}
    prev = TableState(Protocol(1, 4), metadata(struct(field("id", "long")), cfg), 2)
    with raises_exactly(CompatViolation) as err:
        plan("v3", metadata(struct(field("id", "long")), cfg), None, prev)
    assert err.value.rules == ["DELTA-SPARK-CDF-COLUMN-MAPPING"]
    (v,) = err.value.violations
    assert v.observed == "column mapping none -> name"
    assert "'delta.columnMapping.mode'='name'" in v.fix
    # a new table has nothing to rename, and a table with change data feed off is not blocked
    plan("v3", metadata(struct(field("id", "long")), cfg))
    off = {"delta.enableChangeDataFeed": "false"}
    plan(
        "v3",
        metadata(struct(field("id", "long")), off),
        None,
        replace(prev, metadata=metadata(struct(field("id", "long")), off)),
    )


@pytest.mark.parametrize("profile", PROFILES)
def test_checkpoints_that_would_drop_statistics_are_given_json_statistics_back(profile: str) -> None:
    """delta.checkpoint.writeStatsAsJson=false with writeStatsAsStruct=false makes every checkpoint drop
    numRecords; the plan turns JSON statistics back on (the user's false is overridden and said so)."""
    config = {"delta.checkpoint.writeStatsAsJson": "false", "delta.checkpoint.writeStatsAsStruct": "false"}
    p = plan(profile, metadata(BASE_SCHEMA, config))
    assert p.metadata.configuration["delta.checkpoint.writeStatsAsJson"] == "true"
    assert p.metadata.configuration["delta.checkpoint.writeStatsAsStruct"] == "false"
    (change,) = [c for c in p.changes if c.rule == "DELTA-CHECKPOINT-STATS"]
    assert change.what == "set delta.checkpoint.writeStatsAsJson=true (was false)"
    assert validate(profile, p.metadata, p.protocol) == []
    # statistics kept as structs are enough (delta-spark writes them when the property is unset)
    for as_struct in ("true", None):
        config = {"delta.checkpoint.writeStatsAsJson": "false"}
        if as_struct is not None:
            config["delta.checkpoint.writeStatsAsStruct"] = as_struct
        p = plan(profile, metadata(BASE_SCHEMA, config))
        assert p.metadata.configuration["delta.checkpoint.writeStatsAsJson"] == "false"
        assert not [c for c in p.changes if c.rule == "DELTA-CHECKPOINT-STATS"]


def test_sibling_columns_sharing_a_physical_name_are_refused_with_their_paths() -> None:
    cfg = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "4"}
    s = struct(
        field("a", "long", mapped(1, "p")),
        field("b", "long", mapped(2, "p")),
        field(
            "n",
            struct(field("x", "long", mapped(4, "q")), field("y", "long", mapped(5, "q"))),
            mapped(3, "n"),
        ),
    )
    prev = TableState(Protocol(2, 5), metadata(s, {**cfg, "delta.columnMapping.maxColumnId": "5"}), 3)
    with raises_exactly(CompatViolation) as err:
        plan("v3", metadata(s, {**cfg, "delta.columnMapping.maxColumnId": "5"}), None, prev)
    shared = [v for v in err.value.violations if v.rule == "CM-PHYSICAL-NAMES-UNIQUE"]
    assert [(v.path, v.values["other"]) for v in shared] == [("b", "a"), ("n.y", "n.x")]
    assert "recreate the table" in shared[0].fix


def test_a_new_column_never_takes_the_physical_name_an_existing_column_has() -> None:
    """A table without column mapping whose column is named like a generated physical name keeps that
    name for its data files: the new column skips the id whose col-<id> is taken."""
    prev = TableState(Protocol(1, 2), metadata(struct(field("id", "long"), field("col-3", "long"))), 4)
    new = metadata(struct(field("id", "long"), field("col-3", "long"), field("c", "long")))
    out = schema_of(plan("v3", new, None, prev).metadata)
    assert [meta(out, n)[CM_PHYSICAL_NAME] for n in ("id", "col-3", "c")] == ["id", "col-3", "col-4"]
    assert meta(out, "c")[CM_ID] == 4


@pytest.mark.parametrize("profile", PROFILES)
def test_planning_leaves_no_cyclic_garbage(profile: str) -> None:
    """Everything a plan, its validation and the index cache made is freed by reference counting once
    dropped: nothing waits for the cyclic collector's old generations (a full collection of a driver's
    heap, paid by whatever runs next)."""
    schema = struct(
        field("s", struct(field("a", "long"), field("arr", array(struct(field("x", "string")))))),
        field("m", map_(struct(field("k", "long")), array("long"))),
    )
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            p = plan(profile, metadata(schema))
            assert p.changes and validate(profile, p.metadata, p.protocol) == []
            again = plan(profile, p.metadata, p.protocol, previous=state(p))
            assert not again.changes
            del p, again
            clear_index_cache()
        assert gc.collect() == 0
    finally:
        gc.enable()
