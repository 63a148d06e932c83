"""What a rule is: a stable id, the profiles it belongs to, the clause it implements, and a check kind.

A rule is data. The code that decides whether a table passes lives in :mod:`.kinds` (one generic check
per ``kind``); a rule only names the kind and gives it JSON-serialisable ``params``. That split is what
lets :func:`icecompat_writer.rules.export.export_catalog` give the whole catalog as JSON data and
docs/rules.md list every parameter, and what keeps "adding a rule" down to one catalog entry (plus one
check function when no existing kind fits).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from icecompat_writer.compat import StrEnum
from icecompat_writer.schema import JsonDict

__all__ = ["PROFILE_NAMES", "Finding", "Rule", "Scope", "Stage", "freeze", "thaw"]

# The profile names, in the order they are documented. Profiles themselves live in profiles.py; the
# names are here so that rules can be checked against them without an import cycle.
PROFILE_NAMES: tuple[str, ...] = ("v3", "writer-v1", "writer-v3")

_RULE_ID = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")
_CLAUSE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*\.(md|txt)#[a-z0-9-]+$")


class Scope(StrEnum):
    """What a rule needs to be evaluated, which is also when it can be evaluated.

    ``protocol``/``metadata``/``schema`` rules need only the new protocol and metadata, so the planner
    can satisfy them before anything is written. ``replace`` rules compare the new state with the
    previous one (they are skipped when there is none). ``file`` rules look at data files
    (:class:`icecompat_writer.facts.DataFileFacts`) and can only run once files exist.
    """

    PROTOCOL = "protocol"
    METADATA = "metadata"
    SCHEMA = "schema"
    REPLACE = "replace"
    FILE = "file"


class Stage(StrEnum):
    """Where a rule is enforced.

    ``plan``: before any file is written (``plan`` and ``compat_write``'s own write checks);
    ``commit``: again on the state a transaction commits (the session guard, the writer's verify step);
    ``file``: on data files (after they are written, and by the checker); ``iceberg``: when Iceberg
    metadata is emitted; ``upgrade``: when an existing table is upgraded.
    """

    PLAN = "plan"
    COMMIT = "commit"
    FILE = "file"
    ICEBERG = "iceberg"
    UPGRADE = "upgrade"


# Scopes the planner must leave with no violation (file rules need data; replace rules need history).
PLANNABLE_SCOPES = frozenset({Scope.PROTOCOL, Scope.METADATA, Scope.SCHEMA, Scope.REPLACE})


@dataclass(frozen=True, slots=True)
class Finding:
    """One place where a check failed, before it is dressed up as a :class:`Violation`.

    ``values`` fill the rule's message and fix templates; which names a kind provides is declared by
    the kind (``Kind.fields``) so that templates can be verified without running anything.
    """

    path: str = ""
    observed: str | None = None
    expected: str | None = None
    values: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def freeze(value: object) -> object:
    """A deep, read-only copy of JSON-like data: dicts become mappings, lists become tuples.

    Rules are shared module-level constants; freezing their params means no check can accidentally
    change the catalog for the next caller.
    """
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    raise TypeError(f"rule params must be JSON-like, got {type(value).__name__}")


def thaw(value: object) -> object:
    """The inverse of :func:`freeze`: plain dicts and lists, ready for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


def template_fields(template: str) -> set[str]:
    """The ``{name}`` placeholders a message or fix template uses."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@dataclass(frozen=True)
class Rule:
    """One requirement of a spec clause, checked by a generic ``kind`` configured with ``params``.

    ``checks`` says in one sentence what is verified. ``message`` and ``fix`` are ``str.format``
    templates over the finding's ``path``/``observed``/``expected`` and the kind's extra fields.
    ``autofix`` describes what :func:`icecompat_writer.planning.plan` does about it, or is None when
    the planner cannot repair it (then ``fix`` tells the user what to do). ``clause`` is the spec file
    and heading anchor the rule implements; ``also`` lists further clauses that state the same
    requirement, so that coverage of every spec bullet can be shown from the catalog alone.
    ``reference`` names an implementation the rule follows where no protocol text exists (Delta
    Kernel's IcebergWriterCompatV3). ``stages`` says where the rule is enforced.

    Most rules are evaluated by :func:`~icecompat_writer.rules.validate` through their ``kind``. A
    rule of another layer (Delta's own write rules, the Iceberg emitter, the upgrade) has no kind:
    ``layer`` names the module that enforces it, and its ``params`` are the data that module reads.
    Such a rule can be broken in more than one way: ``variants`` names further (message, fix)
    template pairs, and the layer picks one by name (:meth:`render_layer`), so that every wording a
    user can meet is in the catalog and in docs/rules.md.
    """

    id: str
    profiles: tuple[str, ...]
    kind: str | None
    checks: str
    message: str
    fix: str
    clause: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    also: tuple[str, ...] = ()
    autofix: str | None = None
    reference: str = ""
    stages: tuple[Stage, ...] = ()
    layer: str = ""
    variants: Mapping[str, tuple[str, str]] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not _RULE_ID.match(self.id):
            raise ValueError(f"rule id {self.id!r} must look like ABC-SOME-THING")
        if not self.profiles or any(p not in PROFILE_NAMES for p in self.profiles):
            raise ValueError(f"rule {self.id}: unknown profile in {self.profiles!r}")
        if len(set(self.profiles)) != len(self.profiles):
            raise ValueError(f"rule {self.id}: duplicate profile")
        for clause in (self.clause, *self.also):
            if not _CLAUSE.match(clause):
                raise ValueError(f"rule {self.id}: clause {clause!r} must be <file>#<heading-anchor>")
        if not self.checks.endswith("."):
            raise ValueError(f"rule {self.id}: `checks` is one sentence ending with a period")
        if self.kind is None and (not self.layer or not self.stages):
            raise ValueError(f"rule {self.id}: a rule without a check kind names its layer and stages")
        if self.variants and self.kind is not None:
            raise ValueError(f"rule {self.id}: only a rule without a check kind has wording variants")
        object.__setattr__(self, "variants", MappingProxyType(dict(self.variants)))
        object.__setattr__(self, "params", freeze(dict(self.params)))
        object.__setattr__(self, "profiles", tuple(self.profiles))
        object.__setattr__(self, "also", tuple(self.also))
        object.__setattr__(self, "stages", tuple(Stage(s) for s in self.stages))

    def applies_to(self, profile: str) -> bool:
        return profile in self.profiles

    def param(self, name: str) -> Any:  # noqa: ANN401  # catalog JSON: each kind knows its params' shapes
        return self.params[name]

    def params_json(self) -> JsonDict:
        plain = thaw(self.params)
        assert isinstance(plain, dict)
        return plain

    def render(self, finding: Finding) -> tuple[str, str]:
        """(message, fix) for one finding."""
        values = {"path": finding.path, "observed": finding.observed, "expected": finding.expected}
        values.update(finding.values)
        return self.message.format(**values), self.fix.format(**values)

    def templates(self, variant: str = "") -> tuple[str, str]:
        """The (message, fix) templates of ``variant`` (``""``: the rule's own); KeyError for another."""
        if not variant:
            return self.message, self.fix
        if variant not in self.variants:
            raise KeyError(f"rule {self.id} has no wording variant {variant!r}")
        return self.variants[variant]

    def render_layer(self, variant: str, values: Mapping[str, object]) -> tuple[str, str]:
        """(message, fix) of a layer rule's finding: its templates filled with ``values`` (every
        placeholder must be given: a missing one is a KeyError, never a half-rendered sentence)."""
        message, fix = self.templates(variant)
        return message.format(**values), fix.format(**values)


def clauses_text(rule: Rule) -> str:
    """All clauses of a rule as one string (what a :class:`Violation` carries)."""
    return "; ".join((rule.clause, *rule.also))


def unique_ids(rules: Sequence[Rule]) -> None:
    """Raise when two rules share an id (ids are what users, docs and the JVM side refer to)."""
    seen: set[str] = set()
    for r in rules:
        if r.id in seen:
            raise ValueError(f"duplicate rule id {r.id}")
        seen.add(r.id)
