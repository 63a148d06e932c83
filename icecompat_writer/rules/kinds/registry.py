"""The registry of check kinds: what a kind is, how one is registered (:func:`kind`), how a finding
is built, and the check that every catalog rule fits the kind it names (:func:`check_against_kinds`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

from icecompat_writer.rules.context import EvalContext
from icecompat_writer.rules.model import Finding, Rule, Scope, template_fields

__all__ = ["KINDS", "Check", "Kind", "check_against_kinds", "finding", "kind", "kind_of", "shown"]

Check = Callable[[EvalContext, Rule], Iterable[Finding]]


@dataclass(frozen=True)
class Kind:
    """A generic check: its scope, the params it reads, the template fields it fills, what it does."""

    name: str
    scope: Scope
    check: Check
    params: tuple[str, ...]
    fields: tuple[str, ...]
    doc: str
    # The findings depend on the schema and the rule's params alone (not on properties or protocol),
    # so :func:`~icecompat_writer.rules.validate` keeps them with the schema's index, whose schema
    # never changes: the plan's own validation and the writer's after it judge one index once.
    schema_only: bool = False


KINDS: dict[str, Kind] = {}


def kind_of(rule: Rule) -> Kind:
    """The check kind a catalog rule is evaluated by (ValueError for a rule another layer enforces)."""
    if rule.kind is None:
        raise ValueError(f"rule {rule.id} has no check kind: {rule.layer} enforces it")
    return KINDS[rule.kind]


def kind(
    name: str,
    scope: Scope,
    params: tuple[str, ...] = (),
    fields: tuple[str, ...] = (),
    schema_only: bool = False,
) -> Callable[[Check], Check]:
    """Register a check function as kind ``name`` (its docstring becomes the kind's description);
    ``schema_only``: it reads nothing of the context but ``ctx.schema`` (see :attr:`Kind.schema_only`)."""

    def register(fn: Check) -> Check:
        if name in KINDS:
            raise ValueError(f"kind {name} registered twice")
        if schema_only and scope is not Scope.SCHEMA:
            raise ValueError(f"kind {name}: only a schema kind can depend on the schema alone")
        doc = " ".join((fn.__doc__ or "").split())
        KINDS[name] = Kind(name, scope, fn, params, fields, doc, schema_only)
        return fn

    return register


def finding(path: str = "", observed: object = None, expected: object = None, **values: object) -> Finding:
    # Always strings: Violations are sorted, and None would not compare with str.
    return Finding(
        path=path,
        observed="(absent)" if observed is None else str(observed),
        expected="(absent)" if expected is None else str(expected),
        values=MappingProxyType({k: str(v) for k, v in values.items()}),
    )


def shown(value: object) -> str:
    return "(absent)" if value is None else repr(value) if value == "" else str(value)


_COMMON_FIELDS = frozenset({"path", "observed", "expected"})


def check_against_kinds(rules: Iterable[Rule]) -> None:
    """Refuse a catalog whose rules name an unknown kind, give it the wrong params, or use template
    fields its findings never provide (a typo there would only surface as a KeyError mid-validation)."""
    for r in rules:
        k = KINDS.get(r.kind) if r.kind is not None else None
        if k is None:
            raise ValueError(f"rule {r.id}: unknown kind {r.kind!r}")
        if set(r.params) != set(k.params):
            raise ValueError(
                f"rule {r.id}: kind {k.name} takes params {sorted(k.params)}, got {sorted(r.params)}"
            )
        allowed = _COMMON_FIELDS | set(k.fields)
        for text in (r.message, r.fix):
            unknown = template_fields(text) - allowed
            if unknown:
                raise ValueError(
                    f"rule {r.id}: template uses {sorted(unknown)}; kind {k.name} provides {sorted(allowed)}"
                )
