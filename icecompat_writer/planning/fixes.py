"""How the planner repairs each kind of rule. Rules say *what* must hold; this module says how to make
it hold.

One fixer per check kind that can be repaired without touching data: set a property, assign ids and
physical names, add table features, raise the writer version. Kinds missing here (forbidden types,
disallowed features, partition renames, file facts ...) cannot be repaired by rewriting the log, so
the planner leaves them for ``validate`` to report. Fixers run in ``phase`` order because later
repairs depend on earlier ones (nested-id keys use physical names; maxColumnId follows every id).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.planning import ids as idplan
from icecompat_writer.planning.changes import Changed
from icecompat_writer.rules import features as feat
from icecompat_writer.rules.context import CM_MODE_KEY, MAX_COLUMN_ID_KEY, column_mapping_mode
from icecompat_writer.rules.model import Rule
from icecompat_writer.rules.profiles import Profile
from icecompat_writer.rules.schema import MalformedSchemaError, SchemaIndex, index_schema_string
from icecompat_writer.schema import Field, JsonDict, JsonObject, Schema, parse_schema

__all__ = ["FIXERS", "Fixer", "PlanState", "why"]


def why(rule: Rule) -> str:
    return rule.autofix or rule.checks


class PlanState:
    """The planner's working copy: a mutable schema and configuration plus what is to be added to the
    protocol, and a log of every change with the rule that required it."""

    def __init__(
        self,
        profile: Profile,
        metadata: Metadata,
        protocol: Protocol,
        previous: TableStateLike | None,
    ) -> None:
        self.profile = profile
        self.metadata = metadata
        self.protocol = protocol
        self.previous = previous
        try:
            parsed: object = json.loads(metadata.schema_string)
        except (ValueError, TypeError, RecursionError) as e:  # as validation words it, before any plan
            raise MalformedSchemaError(
                f"the table schema (schemaString) is not JSON ({str(e)[:120]})"
            ) from None
        # the planner's private copy, edited in place through the scan's nodes and serialised once
        self.schema: JsonDict = parsed if isinstance(parsed, dict) else {"type": "struct", "fields": []}
        self.config: dict[str, str] = dict(metadata.configuration)
        self.schema_changed = False
        self.config_changed = False
        self.add_features: dict[str, str] = {}
        self.min_writer: dict[int, str] = {}
        # every change, one batch per rule that changed something: (rule id, reason, paths, descriptions)
        self.batches: list[tuple[str, str, Sequence[str], Sequence[str]]] = []
        # id() of new field dict -> the previous field it is (set by the physical-names-stable fixer)
        self.matches: dict[int, JsonObject] = {}
        self._ids: idplan.IdCounter | None = None
        # the fields whose physical name the id fixer did not make col-<id> (None: it has not run)
        self.kept: list[Field] | None = None
        # One parse up front: the fields never change shape while planning, only their metadata does.
        self.scan = idplan.scan(self.schema)
        self.writer = feat.writer_features(protocol)
        self.reader = feat.reader_features(protocol)

    # -- shared facts ---------------------------------------------------------------------------

    @property
    def previous_schema(self) -> SchemaIndex | None:
        if self.previous is None:
            return None
        return index_schema_string(self.previous.metadata.schema_string)

    def previous_model(self) -> Schema:
        """The previous schema as its index parsed it (its top-level fields for an index built otherwise)."""
        idx = self.previous_schema
        if idx is not None and idx.model is not None:
            return idx.model
        return parse_schema({"fields": [f.raw for f in idx.top]} if idx is not None else {"fields": []})

    @property
    def ids(self) -> idplan.IdCounter:
        """The id counter, started above every id the table has ever handed out."""
        if self._ids is None:
            start = max(_int(self.config.get(MAX_COLUMN_ID_KEY)), self.scan.max_id)
            prev = self.previous_schema
            if self.previous is not None and prev is not None:
                prev_max = _int(self.previous.metadata.configuration.get(MAX_COLUMN_ID_KEY))
                start = max(start, prev_max, max((i for i, _ in prev.all_ids()), default=0))
            self._ids = idplan.IdCounter(start)
        return self._ids

    # -- recording --------------------------------------------------------------------------------

    def log(self, rule: Rule, changed: Changed) -> None:
        if changed:
            self.schema_changed = True
            self.batches.append((rule.id, why(rule), changed.paths, changed.whats))

    def set_config(self, rule: Rule, key: str, value: str) -> None:
        before = self.config.get(key)
        if before == value:
            return
        self.config[key] = value
        self.config_changed = True
        what = f"set {key}={value}" + ("" if before is None else f" (was {before})")
        self.batches.append((rule.id, why(rule), ("",), (what,)))

    def require_feature(self, rule: Rule, feature: str) -> None:
        """Ask for ``feature`` in the protocol unless it is already supported (listed or implied)."""
        supported = feature in self.writer and (
            feature not in feat.READER_WRITER_FEATURES or feature in self.reader
        )
        if not supported:
            self.add_features.setdefault(feature, rule.id)


def _int(value: object) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        return 0


Fixer = Callable[[PlanState, Rule], None]


@dataclass(frozen=True)
class FixerEntry:
    phase: int
    fix: Fixer


FIXERS: dict[str, FixerEntry] = {}


def fixer(kind: str, phase: int) -> Callable[[Fixer], Fixer]:
    def register(fn: Fixer) -> Fixer:
        FIXERS[kind] = FixerEntry(phase, fn)
        return fn

    return register


@fixer("column_mapping_mode", phase=10)
def _fix_mode(state: PlanState, rule: Rule) -> None:
    """Choose the mode when none is set: the previous table's mode, ``name`` to upgrade an existing table
    that had none (its data files use the column names), ``id`` otherwise. An explicit value is kept:
    if it is wrong, ``validate`` says so rather than the planner silently overriding the user."""
    if state.config.get(CM_MODE_KEY) is not None:
        return
    allowed = rule.param("allowed")
    mode = "id"
    prev = state.previous_schema
    if state.previous is not None and prev is not None:
        before = column_mapping_mode(state.previous.metadata.configuration)
        if before in ("name", "id"):
            mode = before
        elif prev.fields and "name" in allowed:
            mode = "name"
    state.set_config(rule, CM_MODE_KEY, mode)


@fixer("physical_names_stable", phase=20)
def _fix_stable(state: PlanState, rule: Rule) -> None:
    """Copy id and physical name from the previous schema to the columns that already existed."""
    if state.previous is None:
        return
    mapped = column_mapping_mode(state.previous.metadata.configuration) in ("name", "id")
    changed, matches = idplan.copy_previous_mapping(state.scan.model, state.previous_model(), mapped)
    state.matches = matches
    state.log(rule, changed)


@fixer("column_ids_assigned", phase=30)
def _fix_ids(state: PlanState, rule: Rule) -> None:
    """Assign a fresh id (and physical name col-<id>) to every field that has none."""
    # the scan's col- names still hold unless an earlier fixer copied a previous table's names
    taken = state.scan.generated if state.previous is None else None
    state.kept = []
    state.log(rule, idplan.assign_column_ids(state.scan.fields, state.ids, taken=taken, kept=state.kept))


@fixer("physical_name_pattern", phase=40)
def _fix_physical(state: PlanState, rule: Rule) -> None:
    """Rename, physically, only columns that are new in this write: existing ones have data files.

    A field the id fixer just named ``col-<id>`` already has the name this template gives it."""
    matches = state.matches
    template = rule.param("template")
    fields = state.kept if state.kept is not None and template == _GENERATED else state.scan.fields
    state.log(rule, idplan.rename_physical(fields, template, lambda f: id(f) in matches))


_GENERATED = "col-{id}"  # the physical name assign_column_ids gives a field it hands an id


@fixer("nested_ids_assigned", phase=50)
def _fix_nested(state: PlanState, rule: Rule) -> None:
    """Nested ids after every column id (Kernel's order), reusing a column's previous nested ids."""
    state.log(rule, idplan.assign_nested_ids(state.scan, state.ids, state.matches))


@fixer("max_column_id", phase=60)
def _fix_max_id(state: PlanState, rule: Rule) -> None:
    """Raise maxColumnId to the largest id handed out or present; never lower it."""
    top = state.ids.max  # started above every id present; only grows as ids are handed out
    current = state.config.get(MAX_COLUMN_ID_KEY)
    if top > 0 and (current is None or _int(current) < top):
        state.set_config(rule, MAX_COLUMN_ID_KEY, str(top))


@fixer("required_property", phase=70)
def _fix_property(state: PlanState, rule: Rule) -> None:
    """Set the property when absent; an explicit other value is the user's and is reported instead."""
    key = rule.param("key")
    if key not in state.config:
        state.set_config(rule, key, rule.param("value"))


@fixer("checkpoint_keeps_stats", phase=70)
def _fix_checkpoint_stats(state: PlanState, rule: Rule) -> None:
    """Turn JSON statistics in checkpoints back on. The user's explicit ``false`` is overridden: with
    it, every later checkpoint drops what the profile needs (numRecords) from every file."""
    json_key, struct_key = rule.param("json_key"), rule.param("struct_key")
    as_json = str(state.config.get(json_key, "true")).strip().lower()
    as_struct = str(state.config.get(struct_key, "true")).strip().lower()
    if as_json == "false" and as_struct == "false":
        state.set_config(rule, json_key, "true")


@fixer("required_writer_features", phase=80)
def _fix_writer_features(state: PlanState, rule: Rule) -> None:
    for f in rule.param("features"):
        state.require_feature(rule, f)


@fixer("required_reader_feature", phase=80)
def _fix_reader_feature(state: PlanState, rule: Rule) -> None:
    f = rule.param("feature")
    if f not in state.reader:
        state.add_features.setdefault(f, rule.id)


def _group_supported(state: PlanState, group: tuple[str, ...]) -> bool:
    return any(
        f in state.writer and (f not in feat.READER_WRITER_FEATURES or f in state.reader) for f in group
    )


@fixer("type_requires_features", phase=80)
def _fix_type_features(state: PlanState, rule: Rule) -> None:
    if not state.scan.categories.isdisjoint(rule.param("types")):
        for group in rule.param("features"):
            if not _group_supported(state, group):
                state.add_features.setdefault(group[0], rule.id)


@fixer("column_metadata_requires_features", phase=80)
def _fix_metadata_features(state: PlanState, rule: Rule) -> None:
    if not state.scan.metadata_keys.isdisjoint(rule.param("keys")):
        for group in rule.param("features"):
            if not _group_supported(state, group):
                state.add_features.setdefault(group[0], rule.id)


@fixer("reader_features_in_writer", phase=85)
def _fix_reader_in_writer(state: PlanState, rule: Rule) -> None:
    for f in sorted(state.protocol.reader_features or ()):
        if f not in state.writer:
            state.add_features.setdefault(f, rule.id)


@fixer("min_writer_version", phase=90)
def _fix_writer_version(state: PlanState, rule: Rule) -> None:
    version = int(rule.param("version"))
    if state.protocol.min_writer_version < version:
        state.min_writer.setdefault(version, rule.id)
