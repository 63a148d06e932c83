"""``plan``: the protocol and metadata a write must commit so that the table complies with a profile.

The planner applies every automatic fix the profile's rules offer (``fixes.py``, in phase order), then
validates the result against every rule that does not need data files. Anything still violated cannot
be repaired by writing the log (a forbidden type, a disallowed feature, an existing column with the
wrong physical name ...) and is raised, all violations at once, as :class:`CompatViolation`. A table
that already complies comes back as the very same objects with no changes, so planning is idempotent
and a no-op write never commits a metadata change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from icecompat_writer.errors import CompatViolation
from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.perf import gc_paused
from icecompat_writer.planning.changes import Change, ChangeLog
from icecompat_writer.planning.fixes import FIXERS, FixerEntry, PlanState, why
from icecompat_writer.planning.ids import index_scanned
from icecompat_writer.planning.protocol import build_protocol
from icecompat_writer.rules.catalog import RULES_BY_ID
from icecompat_writer.rules.evaluate import validate
from icecompat_writer.rules.model import PLANNABLE_SCOPES, Rule
from icecompat_writer.rules.profiles import Profile, get_profile
from icecompat_writer.rules.schema import cached_index, remember_index

__all__ = ["Change", "Plan", "plan"]

# The rule credited for listing features a legacy protocol version implied.
_VERSION_RULE = "PROTO-WRITER-VERSION"


@dataclass(frozen=True)
class Plan:
    """The compliant state: what to commit (``protocol``, ``metadata``) and why it differs from the input.

    A Plan is itself a table state (it has ``protocol`` and ``metadata``), so it can be validated or
    passed as ``previous`` to the next plan.
    """

    profile: str
    protocol: Protocol
    metadata: Metadata
    changes: Sequence[Change]

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def plan(
    profile: str | Profile,
    new_metadata: Metadata,
    new_protocol: Protocol | None = None,
    previous: TableStateLike | None = None,
) -> Plan:
    """Make ``new_metadata`` (and ``new_protocol``) compliant with ``profile``.

    ``new_protocol`` defaults to the previous table's protocol, or to an empty one for a new table.
    ``previous`` is the table before this write (None for a new table): existing columns keep their
    ids and physical names, new ids continue after its maxColumnId, and the replace rules are checked
    against it. Raises :class:`CompatViolation` listing every violation that no fix can repair, and
    :class:`UnknownProfileError` for an unknown profile.
    """
    prof = get_profile(profile)
    with gc_paused():
        return _plan(prof, new_metadata, new_protocol, previous)


def _plan(
    prof: Profile, new_metadata: Metadata, new_protocol: Protocol | None, previous: TableStateLike | None
) -> Plan:
    if new_protocol is None:
        new_protocol = previous.protocol if previous is not None else Protocol(1, 1)
    state = PlanState(prof, new_metadata, new_protocol, previous)

    fixable: list[tuple[FixerEntry, Rule]] = []
    for rule_id in prof.rule_ids:
        rule = RULES_BY_ID[rule_id]
        entry = FIXERS.get(rule.kind) if rule.kind is not None else None
        if entry is not None:
            fixable.append((entry, rule))
    fixable.sort(key=lambda entry: entry[0].phase)  # stable: catalog order within a phase
    for fixer_entry, rule in fixable:
        fixer_entry.fix(state, rule)

    metadata = new_metadata
    index = None
    if state.schema_changed:
        metadata = metadata.with_schema(state.scan.model)
    else:
        index = cached_index(metadata.schema_string)  # unchanged: an index of it may exist already
    # Otherwise index the planner's own copy from its scan instead of parsing the text again.
    index = index or index_scanned(state.schema, state.scan)
    remember_index(metadata.schema_string, index)
    if state.config_changed:
        metadata = replace(metadata, configuration=MappingProxyType(dict(state.config)))

    protocol, proto_changes = build_protocol(
        new_protocol, state.add_features, state.min_writer, _VERSION_RULE
    )

    problems = validate(prof, metadata, protocol, previous, scopes=PLANNABLE_SCOPES, schema=index)
    if problems:
        raise CompatViolation(
            problems, f"(planning profile {prof.name}; these cannot be fixed automatically)"
        )

    batches = state.batches
    batches.extend((c.rule, why(RULES_BY_ID[c.rule]), ("",), (c.what,)) for c in proto_changes)
    return Plan(prof.name, protocol, metadata, ChangeLog(batches))
