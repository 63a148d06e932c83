"""What a violation says: profile, rule id, the full logical column path, observed vs expected, the fix
and the clause; all violations at once, in a deterministic order."""

from __future__ import annotations

import json

from icecompat_writer.errors import Violation
from icecompat_writer.rules import UnknownProfileError, validate
from icecompat_writer.rules.schema import CM_PHYSICAL_NAME

from .builders import compliant, good_file, meta, raises_exactly, with_config, with_features, with_schema


def _by_rule(violations: list[Violation], rule: str) -> list[Violation]:
    return [v for v in violations if v.rule == rule]


def test_violation_names_profile_rule_logical_path_and_fix() -> None:
    s = compliant("writer-v1")

    def edit(schema: dict) -> None:
        meta(schema, "a.b/q`uote")[CM_PHYSICAL_NAME] = "legacy"
        meta(schema, "m/key/k2")["delta.invariants"] = "{}"
        schema["fields"][0]["type"] = "short"

    bad = with_schema(s, edit)
    vs = validate("writer-v1", bad.metadata, bad.protocol)
    (phys,) = _by_rule(vs, "IWC1-PHYSICAL-NAME")
    assert phys.profile == "writer-v1"
    assert phys.path == "`a.b`.`q``uote`"
    assert phys.observed == "legacy" and phys.expected.startswith("col-")
    assert "icecompat upgrade" in phys.fix
    assert phys.clause.startswith(
        "delta-rfc-iceberg-writer-compat-v1.md#writer-requirements-for-icebergwritercompatv1"
    )
    assert "IWC1-PHYSICAL-NAME at column `" in phys.render()
    (inv,) = _by_rule(vs, "IWC1-NO-INVARIANTS")
    assert inv.path == "m.key.k2"
    (short,) = _by_rule(vs, "IWC1-NO-BYTE-SHORT")
    assert (short.path, short.observed) == ("id", "short")
    assert "short" in short.message


def test_nested_paths_spell_out_element_key_value() -> None:
    s = compliant("v3")

    def edit(schema: dict) -> None:
        meta(schema, "mm")["delta.columnMapping.nested.ids"] = {}
        meta(schema, "arr")["delta.columnMapping.nested.ids"] = {}

    bad = with_schema(s, edit)
    paths = [v.path for v in validate("v3", bad.metadata, bad.protocol)]
    # arr.element.d keeps its own nested id: it is stored on `d`, the nearest struct field.
    assert paths == [
        "arr.element",
        "mm.key",
        "mm.value",
        "mm.value.key",
        "mm.value.value",
        "mm.value.value.element",
    ]


def test_all_violations_at_once_and_deterministic() -> None:
    s = compliant("writer-v3")
    bad = with_features(
        with_config(
            s,
            {"delta.enableChangeDataFeed": "true", "delta.constraints.a": "x", "delta.constraints.b": "y"},
            drop=["delta.enableIcebergWriterCompatV3", "delta.columnMapping.maxColumnId"],
        ),
        ["collations"],
    )
    files = [
        good_file(bad.metadata, "f2.parquet", num_records=None),
        good_file(bad.metadata, "f1.parquet", num_records=None),
    ]
    first = validate("writer-v3", bad.metadata, bad.protocol, None, files)
    second = validate("writer-v3", bad.metadata, bad.protocol, None, list(reversed(files)))
    assert first == second == sorted(first)
    rules = [v.rule for v in first]
    assert rules.count("IWC1-NO-CHECK-CONSTRAINTS") == 2
    assert rules.count("ICV3-NUM-RECORDS") == 2
    assert {"IWC1-NO-CHANGE-DATA-FEED", "IWC3-ENABLED", "CM-MAX-COLUMN-ID", "IWC3-FEATURE-ALLOWLIST"} <= set(
        rules
    )
    assert {v.message for v in first if v.rule == "ICV3-NUM-RECORDS"} == {
        "file f1.parquet has no numRecords statistic",
        "file f2.parquet has no numRecords statistic",
    }


def test_scopes_filter_rules() -> None:
    from icecompat_writer.rules import Scope

    s = compliant("v3")
    bad = with_config(s, drop=["delta.enableIcebergCompatV3"])
    f = [good_file(s.metadata, num_records=None)]
    assert {v.rule for v in validate("v3", bad.metadata, bad.protocol, files=f, scopes={Scope.FILE})} == {
        "ICV3-NUM-RECORDS"
    }
    assert {v.rule for v in validate("v3", bad.metadata, bad.protocol, files=f, scopes={Scope.METADATA})} == {
        "ICV3-ENABLED"
    }


def test_unknown_profile() -> None:
    s = compliant("v3")
    with raises_exactly(UnknownProfileError):
        validate("v4", s.metadata, s.protocol)


def test_type_changes_given_as_a_json_string_are_read() -> None:
    s = with_features(compliant("v3"), ["typeWidening"], ["typeWidening"])
    changes = json.dumps([{"fromType": "integer", "toType": "double"}])
    bad = with_schema(s, lambda sc: meta(sc, "p").update({"delta.typeChanges": changes}))
    (v,) = validate("v3", bad.metadata, bad.protocol)
    assert (v.rule, v.path, v.observed) == ("ICV3-TYPE-WIDENING", "p", "integer -> double")
    broken = with_schema(s, lambda sc: meta(sc, "p").update({"delta.typeChanges": "not json"}))
    assert [v.rule for v in validate("v3", broken.metadata, broken.protocol)] == ["ICV3-TYPE-WIDENING"]
