"""``rules.verdict.decide``: each moment is held to what that moment knows, and nothing else.

Real table states made by the planner (``builders.compliant``), edited the way a write or a command
would edit them; the verdicts are compared by rule id, column path and profile.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest

from icecompat_writer.deltalog.actions import TableState
from icecompat_writer.errors import CompatViolation
from icecompat_writer.facts import ParquetFooter
from icecompat_writer.rules import PROFILES, RULES_BY_ID, validate
from icecompat_writer.rules.catalog.transitions import FEATURES_AHEAD, PROFILE_UPGRADES
from icecompat_writer.rules.verdict import (
    Audit,
    CommandAhead,
    DataFrameSchema,
    Declaration,
    GuardedCommit,
    IcebergFiles,
    IcebergRead,
    KeptFiles,
    MetadataChange,
    Plan,
    PreCommit,
    Rewrite,
    TableProperties,
    Verdict,
    asked_properties,
    awaits_command,
    commit_profile,
    decide,
)
from icecompat_writer.schema import parse_schema

from .builders import (
    compliant,
    drop_from_footer,
    field,
    good_file,
    physical_of,
    raises_exactly,
    rules_of,
    struct,
    with_config,
    with_features,
    with_schema,
)

V3, W1, W3 = "v3", "writer-v1", "writer-v3"


def _without_p(s: TableState) -> ParquetFooter:
    """The footer of a file that lacks the partition column ``p`` (a file rule's violation)."""
    footer = good_file(s.metadata).footer
    assert footer is not None
    return drop_from_footer(footer, physical_of(s.metadata, "p"))


def _hits(verdict: Verdict) -> list[tuple[str, str]]:
    return sorted((v.rule, v.path) for v in verdict.violations)


# --- DataFrameSchema, TableProperties ------------------------------------------------------------------


def test_a_dataframe_schema_with_one_column_twice_or_an_empty_struct_is_refused_at_every_path() -> None:
    schema = struct(
        field("id", "long"),
        field("ID", "long"),
        field("s", struct(field("x", "int"), field("X", "int"))),
        field("e", {"type": "array", "elementType": struct(), "containsNull": True}),
    )
    judged = decide(DataFrameSchema(parse_schema(schema)))
    assert _hits(judged) == [
        ("DELTA-WRITE-DUPLICATE-COLUMN", "ID"),
        ("DELTA-WRITE-DUPLICATE-COLUMN", "s.X"),
        ("DELTA-WRITE-EMPTY-STRUCT", "e.element"),
    ]
    assert judged.profile is None
    assert not decide(
        DataFrameSchema(parse_schema(struct(field("id", "long"), field("s", struct(field("x", "int"))))))
    ).refused


def test_table_properties_reaching_the_hadoop_configuration_are_refused() -> None:
    judged = decide(TableProperties({"parquet.crypto.factory.class": "x.Evil", "delta.appendOnly": "true"}))
    assert [(v.rule, v.observed) for v in judged.violations] == [
        ("DELTA-WRITE-CONFIG-PROPERTY", "parquet.crypto.factory.class")
    ]
    assert not decide(TableProperties({"delta.appendOnly": "true"})).refused


# --- Plan ---------------------------------------------------------------------------------------------


def test_plan_of_a_compliant_state_passes_and_names_its_profile() -> None:
    s = compliant(V3)
    judged = decide(Plan(V3, s.metadata, s.protocol))
    assert not judged.refused and judged.violations == () and judged.profile == V3


def test_plan_holds_the_asked_properties_to_what_delta_spark_parses() -> None:
    s = with_config(compliant(V3), {"delta.appendOnly": "yes"})
    judged = decide(Plan(V3, s.metadata, s.protocol, asked={"delta.appendOnly": "yes"}))
    assert _hits(judged) == [("DELTA-WRITE-PROPERTY-VALUE", "")]
    # a value the write did not ask for (the table had it) is not the write's to refuse
    assert not decide(Plan(V3, s.metadata, s.protocol, asked={})).refused


def test_plan_without_a_profile_judges_only_deltas_write_rules() -> None:
    bare = compliant(V3)
    off = with_config(bare, drop=["delta.enableIcebergCompatV3"])
    assert "ICV3-ENABLED" in rules_of(decide(Plan(V3, off.metadata, off.protocol)).violations)
    assert not decide(Plan(None, off.metadata, off.protocol, asked={})).refused


def test_raise_if_refused_raises_every_violation_once_sorted() -> None:
    s = with_config(compliant(V3), {"delta.appendOnly": "yes", "delta.enableChangeDataFeed": "maybe"})
    judged = decide(Plan(V3, s.metadata, s.protocol, asked=dict(s.metadata.configuration)))
    with raises_exactly(CompatViolation, match="planning t") as err:
        judged.raise_if_refused("(planning t)")
    assert list(err.value.violations) == sorted(judged.violations)
    assert len(err.value.violations) == 2
    decide(Plan(V3, compliant(V3).metadata, compliant(V3).protocol)).raise_if_refused("never")


# --- PreCommit, KeptFiles, Rewrite ------------------------------------------------------------------


def test_pre_commit_leaves_row_ids_to_the_commit_and_requires_every_footer() -> None:
    s = compliant(V3)
    fresh = good_file(s.metadata, base_row_id=None, default_row_commit_version=None)
    assert "ICV3-ROW-IDS-ASSIGNED" in rules_of(decide(Audit(V3, s.metadata, s.protocol, (fresh,))).violations)
    assert not decide(PreCommit(V3, s.metadata, s.protocol, None, (fresh,))).refused
    unread = good_file(s.metadata, "b.parquet", footer=None, footer_error="b.parquet: truncated")
    [hit] = decide(PreCommit(V3, s.metadata, s.protocol, None, (fresh, unread))).violations
    assert (hit.rule, hit.observed) == ("DELTA-WRITE-FOOTER-UNREAD", "b.parquet")
    assert "truncated" in hit.message


def test_kept_files_are_held_to_the_file_rules_only() -> None:
    s = compliant(V3)
    off = with_config(s, drop=["delta.enableIcebergCompatV3"])  # a table rule, not a file rule
    short = good_file(s.metadata, "short.parquet", footer=_without_p(s))
    judged = decide(KeptFiles(V3, off.metadata, off.protocol, s, (good_file(s.metadata), short)))
    assert judged.violations and {v.values.get("file") for v in judged.violations} == {"short.parquet"}
    assert "ICV3-ENABLED" not in rules_of(judged.violations)


def test_rewrite_refuses_a_variant_column_under_iceberg_compat_v3() -> None:
    s = compliant(V3, schema=struct(field("id", "long"), field("v", "variant")), partitions=())
    assert _hits(decide(Rewrite(V3, s.metadata, s.protocol, s))) == [("DELTA-WRITE-VARIANT-ICEBERG-V3", "v")]
    plain = compliant(V3, schema=struct(field("id", "long")), partitions=())
    assert not decide(Rewrite(V3, plain.metadata, plain.protocol, plain)).refused


# --- MetadataChange, Declaration ----------------------------------------------------------------------


def test_metadata_change_without_any_profile_has_none() -> None:
    bare = compliant(V3)
    none = with_config(bare, drop=["delta.enableIcebergCompatV3"])
    judged = decide(MetadataChange("", none.metadata, None))
    assert judged == Verdict() and judged.profile is None


@pytest.mark.parametrize(("held", "declared"), sorted(PROFILE_UPGRADES))
def test_metadata_change_may_move_a_table_up_and_then_declares_it(held: str, declared: str) -> None:
    s = compliant(held)
    up = with_config(s, {"delta.enableIcebergWriterCompatV3": "true"}).metadata
    judged = decide(MetadataChange("", up, s))
    assert (judged.refused, judged.profile, judged.declares) == (False, declared, True)
    # a CREATE/REPLACE rewrites every file: nothing is declared over old files
    assert decide(MetadataChange("", up, s, creating=True)).declares is False


@pytest.mark.parametrize(
    ("held", "key", "rule"),
    [
        (W3, "delta.enableIcebergWriterCompatV3", "IWC3-ENABLED"),
        (W1, "delta.enableIcebergWriterCompatV1", "IWC1-ENABLED"),
        (V3, "delta.enableIcebergCompatV3", "ICV3-ENABLED"),
    ],
)
def test_metadata_change_dropping_the_profile_is_refused_under_the_held_profile(
    held: str, key: str, rule: str
) -> None:
    s = compliant(held)
    judged = decide(MetadataChange("", with_config(s, {key: "false"}).metadata, s))
    assert judged.refused and judged.profile == held
    assert rule in rules_of(judged.violations)
    assert all(v.rule.endswith("-ENABLED") for v in judged.violations)


def test_metadata_change_down_from_writer_v1_to_v3_is_a_drop() -> None:
    s = compliant(W1)
    down = with_config(
        s, {"delta.enableIcebergWriterCompatV1": "false", "delta.enableIcebergCompatV3": "true"}
    )
    judged = decide(MetadataChange("", down.metadata, s))
    assert judged.refused and judged.profile == W1 and "IWC1-ENABLED" in rules_of(judged.violations)


def test_metadata_change_setting_a_hadoop_property_is_refused() -> None:
    s = compliant(V3)
    judged = decide(MetadataChange("", with_config(s, {"fs.file.impl": "x.Evil"}).metadata, s))
    assert _hits(judged) == [("DELTA-WRITE-CONFIG-PROPERTY", "")] and judged.profile == V3
    assert judged.declares is False


def test_declaration_holds_the_live_files_to_the_profile_and_points_at_upgrade() -> None:
    s = compliant(V3)
    short = good_file(s.metadata, footer=_without_p(s))
    judged = decide(Declaration(V3, s.metadata, s.protocol, s, (short,)))
    assert judged.refused and all("icecompat upgrade" in v.fix for v in judged.violations)
    assert not decide(Declaration(V3, s.metadata, s.protocol, s, ())).refused
    assert not decide(Declaration(V3, s.metadata, s.protocol, s, (good_file(s.metadata),))).refused


# --- GuardedCommit, CommandAhead ----------------------------------------------------------------------


def test_guarded_commit_takes_the_sessions_profile_then_the_tables() -> None:
    s = compliant(W1)
    assert commit_profile("", s.metadata, s.protocol, None) == W1
    assert commit_profile(V3, s.metadata, s.protocol, None) == V3
    bare = with_config(s, drop=["delta.enableIcebergWriterCompatV1"])
    bare = with_features(bare, drop=["icebergWriterCompatV1"])
    assert commit_profile("", bare.metadata, bare.protocol, s) == W1  # the table before it held it
    assert commit_profile("", bare.metadata, bare.protocol, None) is None
    assert decide(GuardedCommit("", bare.metadata, bare.protocol, None)) == Verdict()


def test_guarded_commit_refuses_a_feature_added_ahead_of_its_property() -> None:
    ahead = FEATURES_AHEAD[0]
    s = compliant(ahead.profile)
    added = with_features(s, add_writer=[ahead.feature])
    judged = decide(GuardedCommit("", added.metadata, added.protocol, s, (good_file(s.metadata),)))
    [hit] = judged.violations
    observed = f"the commit adds the {ahead.feature} table feature"
    assert (hit.rule, hit.profile, hit.observed) == (ahead.rule, ahead.profile, observed)
    assert hit.fix == RULES_BY_ID[ahead.rule].fix.format(key=ahead.key)
    # the same protocol on a new table: nothing was added ahead of anything
    assert ahead.rule not in rules_of(
        decide(GuardedCommit("", added.metadata, added.protocol, None)).violations
    )


def test_guarded_commit_refuses_files_outside_the_table_and_unread_footers() -> None:
    s = compliant(W3)
    unread = good_file(s.metadata, footer=None, footer_error="part-0.parquet: no footer sent")
    judged = decide(GuardedCommit(W3, s.metadata, s.protocol, s, (unread,), outside=("/other/x.parquet",)))
    assert rules_of(judged.violations) == {"DELTA-WRITE-SHALLOW-CLONE", "DELTA-WRITE-FOOTER-UNREAD"}
    assert not decide(GuardedCommit(W3, s.metadata, s.protocol, s, (good_file(s.metadata),))).refused


@pytest.mark.parametrize(("profile", "refused"), [(W1, True), (W3, True), (V3, False)])
def test_an_opted_out_session_is_refused_unjudged_only_on_writer_profile_tables(
    profile: str, refused: bool
) -> None:
    s = compliant(profile)
    judged = decide(GuardedCommit("", s.metadata, s.protocol, s, opted_out=True))
    assert judged.violations == () and judged.unjudged is refused and judged.refused is refused
    assert judged.profile == (profile if refused else None)


def test_command_ahead_leaves_the_row_ids_to_the_commands_own_backfill() -> None:
    s = compliant(V3)
    found = validate(V3, s.metadata, s.protocol, files=[good_file(s.metadata, base_row_id=None)])
    found += validate(V3, with_config(s, drop=["delta.enableIcebergCompatV3"]).metadata, s.protocol)
    assert rules_of(found) == {"ICV3-ROW-IDS-ASSIGNED", "ICV3-ENABLED"}
    tracking = decide(CommandAhead({"delta.enableRowTracking": "TRUE"}, V3, found))
    assert rules_of(tracking.violations) == {"ICV3-ENABLED"} and tracking.profile == V3
    other = decide(CommandAhead({"delta.appendOnly": "true"}, V3, found))
    assert rules_of(other.violations) == rules_of(found)
    assert not decide(CommandAhead({"delta.enableRowTracking": "true"}, V3, found[:1])).refused


def test_a_commit_awaits_its_command_until_it_carries_every_property() -> None:
    asked = {"delta.enableRowTracking": "true", "delta.enableIcebergCompatV3": "true"}
    assert awaits_command(asked, {"delta.enableRowTracking": "true"})
    assert not awaits_command(
        asked, {"delta.enableRowTracking": "TRUE ", "delta.enableIcebergCompatV3": "true"}
    )
    assert not awaits_command({}, {})


def test_asked_properties_are_the_new_and_changed_ones() -> None:
    s = compliant(V3)
    new = with_config(s, {"a": "1", "delta.enableRowTracking": "false"}).metadata
    assert asked_properties(new, s) == {"a": "1", "delta.enableRowTracking": "false"}
    assert asked_properties(s.metadata, None) == dict(s.metadata.configuration)


# --- Audit, IcebergRead -------------------------------------------------------------------------------


def test_an_audit_without_a_profile_judges_every_candidate_and_the_write_rules_once() -> None:
    s = with_config(compliant(V3), {"spark.sql.parquet.output.committer.class": "x.Evil"})
    judged = decide(Audit(None, s.metadata, s.protocol))
    assert judged.profile is None and set(judged.candidates) == set(PROFILES)
    for name, count in judged.candidates.items():
        assert count == len(decide(Audit(name, s.metadata, s.protocol)).violations) - 1
    assert [v.rule for v in judged.violations].count("DELTA-WRITE-CONFIG-PROPERTY") == 1
    assert judged.candidates[V3] == 0 and list(judged.violations) == sorted(judged.violations)


def test_an_iceberg_reader_is_not_held_to_delta_sparks_own_limits() -> None:
    def decimal_partition(schema: dict) -> None:
        for f in schema["fields"]:
            if f["name"] == "p":
                f["type"] = "decimal(10,2)"

    s = with_schema(compliant(V3), decimal_partition)
    assert _hits(decide(Audit(V3, s.metadata, s.protocol))) == [("DELTA-SPARK-DECIMAL-PARTITION", "p")]
    assert not decide(IcebergRead(V3, s.metadata, s.protocol)).refused
    broken = with_config(s, drop=["delta.enableIcebergCompatV3"])
    assert "ICV3-ENABLED" in rules_of(decide(IcebergRead(V3, broken.metadata, broken.protocol)).violations)


def test_an_iceberg_reader_judged_batch_by_batch_finds_what_one_judgement_of_every_file_finds() -> None:
    s = compliant(V3)
    good = good_file(s.metadata)
    bad = replace(good, path="part-1.parquet", base_row_id=None, default_row_commit_version=None)
    files = (good, bad, replace(good, path="part-2.parquet"))
    whole = decide(IcebergRead(V3, s.metadata, s.protocol, files)).violations
    batches = [v for f in files for v in decide(IcebergFiles(V3, s.metadata, s.protocol, (f,))).violations]
    assert whole and sorted(batches) == sorted(whole)
    assert {v.values.get("file") for v in batches} == {"part-1.parquet"}
    # the table's own rules are not the batch's: a state without the profile's property has no file problem
    broken = with_config(s, drop=["delta.enableIcebergCompatV3"])
    assert not decide(IcebergFiles(V3, broken.metadata, broken.protocol, (good,))).violations


def test_moments_are_frozen() -> None:
    s = compliant(V3)
    moment = Plan(V3, s.metadata, s.protocol)
    with raises_exactly(FrozenInstanceError):
        moment.profile = W3  # type: ignore[misc]
    assert replace(moment, profile=W3).profile == W3


def test_transitions_name_profiles_and_rules_of_those_profiles() -> None:
    """The catalog's transition data: known profiles, and refusals under a rule of the profile held."""
    for held, declared in PROFILE_UPGRADES:
        assert {held, declared} <= set(PROFILES) and held != declared
    for ahead in FEATURES_AHEAD:
        assert ahead.profile in RULES_BY_ID[ahead.rule].profiles
        assert ahead.key in RULES_BY_ID[ahead.rule].param("keys")
