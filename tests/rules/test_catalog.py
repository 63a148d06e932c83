"""The catalog as data: rule records are validated, consistent with their kinds, profiles and fixers, and
exported as JSON the JVM side can load."""

from __future__ import annotations

import json
import re

import pytest

from icecompat_writer.planning.fixes import FIXERS
from icecompat_writer.rules import CATALOG, KINDS, PROFILES, RULES_BY_ID, Rule, export_catalog, get_profile
from icecompat_writer.rules.kinds import check_against_kinds
from icecompat_writer.rules.model import PROFILE_NAMES, freeze, thaw, unique_ids
from icecompat_writer.rules.profiles import UnknownProfileError

from .builders import raises_exactly


def rule(**changes: object) -> Rule:
    base: dict = {
        "id": "TEST-RULE",
        "profiles": ("v3",),
        "kind": "required_property",
        "checks": "Something holds.",
        "message": "property {key} is wrong",
        "fix": "set {key}",
        "clause": "delta-PROTOCOL.md#column-mapping",
        "params": {"key": "k", "value": "v"},
    }
    base.update(changes)
    return Rule(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"id": "lowercase-id"}, "must look like"),
        ({"id": "NODASH"}, "must look like"),
        ({"profiles": ("v4",)}, "unknown profile"),
        ({"profiles": ()}, "unknown profile"),
        ({"profiles": ("v3", "v3")}, "duplicate profile"),
        ({"clause": "PROTOCOL.md"}, "clause"),
        ({"clause": "delta-PROTOCOL.md#Column Mapping"}, "clause"),
        ({"checks": "no period"}, "one sentence"),
    ],
)
def test_malformed_rules_are_refused(changes: dict, complaint: str) -> None:
    with raises_exactly(ValueError, match=complaint):
        rule(**changes)


def test_params_are_frozen_and_thaw_back_to_json() -> None:
    r = rule(params={"key": "k", "value": "v"})
    with raises_exactly(TypeError):
        r.params["key"] = "other"  # type: ignore[index]
    nested = {"a": [1, {"b": ["c"]}], "d": None}
    assert thaw(freeze(nested)) == nested
    with raises_exactly(TypeError, match="JSON-like"):
        freeze({"x": object()})


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"kind": "no_such_kind"}, "unknown kind"),
        ({"params": {"key": "k"}}, "takes params"),
        ({"message": "uses {nonexistent}"}, "template uses"),
        ({"fix": "uses {file}"}, "template uses"),
    ],
)
def test_catalog_check_refuses_rules_that_do_not_fit_their_kind(changes: dict, complaint: str) -> None:
    with raises_exactly(ValueError, match=complaint):
        check_against_kinds([rule(**changes)])


def test_duplicate_ids_are_refused() -> None:
    with raises_exactly(ValueError, match="duplicate rule id"):
        unique_ids([rule(), rule()])


def test_every_kind_is_used_by_some_rule() -> None:
    # A kind nobody uses would be untested code the JVM side is asked to implement.
    assert {r.kind for r in CATALOG} == set(KINDS)


def test_autofix_text_exactly_where_the_planner_has_a_fixer() -> None:
    for r in CATALOG:
        assert (r.autofix is not None) == (r.kind in FIXERS), r.id


def test_every_fixer_is_for_an_existing_kind() -> None:
    assert set(FIXERS) <= set(KINDS)


def test_profiles_are_data_consistent_with_their_rules() -> None:
    assert tuple(PROFILES) == PROFILE_NAMES
    for p in PROFILES.values():
        assert p.rule_ids == tuple(r.id for r in CATALOG if p.name in r.profiles)
        required = {
            r.params["key"]: r.params["value"]
            for r in (RULES_BY_ID[i] for i in p.rule_ids)
            if r.kind == "required_property"
        }
        assert dict(p.properties) == required, p.name
        features = {
            f
            for r in (RULES_BY_ID[i] for i in p.rule_ids)
            if r.kind == "required_writer_features"
            for f in r.params["features"]
        }
        assert set(p.features) == features, p.name


def test_get_profile_and_unknown_profiles() -> None:
    assert get_profile("writer-v1").name == "writer-v1"
    assert get_profile(PROFILES["v3"]) is PROFILES["v3"]
    with raises_exactly(UnknownProfileError, match="unknown profile 'v9'"):
        get_profile("v9")


def test_rule_ids_say_where_they_come_from() -> None:
    prefixes = {"ICV3": {"v3", "writer-v3"}, "ICV2": {"writer-v1"}, "IWC3": {"writer-v3"}}
    for r in CATALOG:
        head = r.id.split("-")[0]
        if head in prefixes:
            assert set(r.profiles) <= prefixes[head], r.id
        if head == "IWC1":
            assert "writer-v1" in r.profiles and "v3" not in r.profiles, r.id


def test_export_is_json_and_complete() -> None:
    data = export_catalog()
    again = json.loads(json.dumps(data))
    assert again == data
    assert [r["id"] for r in data["rules"]] == [r.id for r in CATALOG]
    assert set(data["profiles"]) == set(PROFILES)
    for r in data["rules"]:
        kind = data["kinds"][r["kind"]]
        assert r["scope"] == kind["scope"]
        assert set(r["params"]) == set(kind["params"])
        used = set(re.findall(r"\{(\w+)\}", r["message"] + r["fix"]))
        assert used <= set(kind["fields"]), r["id"]
    assert data["profiles"]["writer-v3"]["rules"] == list(PROFILES["writer-v3"].rule_ids)
    allow = next(r for r in data["rules"] if r["id"] == "IWC1-FEATURE-ALLOWLIST")
    assert (
        "typeWidening" in allow["params"]["allowed"] and "rowTracking" in allow["params"]["inactive_allowed"]
    )
