"""``validate``: evaluate every rule of a profile and report every violation at once.

Each rule runs independently and yields all of its findings, so a table with five problems gets five
violations in one report, never one per attempt. The result is sorted, so the same input always gives
the same list in the same order (reports, tests and the JVM side can compare them).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from icecompat_writer.errors import Violation
from icecompat_writer.facts import DataFileFacts
from icecompat_writer.model import Metadata, Protocol, TableStateLike
from icecompat_writer.perf import gc_paused
from icecompat_writer.rules.catalog import RULES_BY_ID
from icecompat_writer.rules.context import EvalContext
from icecompat_writer.rules.kinds import kind_of
from icecompat_writer.rules.model import Finding, Rule, Scope, clauses_text
from icecompat_writer.rules.profiles import Profile, get_profile
from icecompat_writer.rules.schema import SchemaIndex

__all__ = ["finding_violation", "rule_scope", "validate"]


def rule_scope(rule: Rule) -> Scope:
    """A rule's scope is its kind's: what the check needs decides when it can run."""
    return kind_of(rule).scope


def validate(
    profile: str | Profile,
    metadata: Metadata,
    protocol: Protocol,
    previous: TableStateLike | None = None,
    files: Iterable[DataFileFacts] = (),
    *,
    scopes: Collection[Scope] | None = None,
    schema: SchemaIndex | None = None,
) -> list[Violation]:
    """Every violation of ``profile`` by the table state (``metadata``, ``protocol``).

    ``previous`` is the state before this write, when there is one: the ``replace`` rules compare
    against it. ``files`` are facts about data files (the ``file`` rules). ``scopes`` restricts which
    rules run (default: all). ``schema`` is an already-built index of ``metadata``'s schema (the
    planner passes it to save a parse). Raises :class:`UnknownProfileError` for an unknown profile.
    """
    prof = get_profile(profile)
    with gc_paused():
        return _validate(prof, metadata, protocol, previous, tuple(files), scopes, schema)


def _validate(
    prof: Profile,
    metadata: Metadata,
    protocol: Protocol,
    previous: TableStateLike | None,
    files: tuple[DataFileFacts, ...],
    scopes: Collection[Scope] | None,
    schema: SchemaIndex | None,
) -> list[Violation]:
    ctx = EvalContext(prof.name, prof.properties, metadata, protocol, previous, files, schema)
    out: list[Violation] = []
    for rule_id in prof.rule_ids:
        rule = RULES_BY_ID[rule_id]
        kind = kind_of(rule)
        if scopes is not None and kind.scope not in scopes:
            continue
        found: Iterable[Finding]
        if kind.schema_only:  # judged once per index: the schema and the rule decide them alone
            memo = ctx.schema.findings
            hit = memo.get(rule.id)
            if hit is None:
                hit = memo[rule.id] = tuple(kind.check(ctx, rule))
            found = hit
        else:
            found = kind.check(ctx, rule)
        out.extend(_violation(prof.name, rule, finding) for finding in found)
    out.sort(key=_order)
    return out


def _violation(profile: str, rule: Rule, finding: Finding) -> Violation:
    message, fix = rule.render(finding)
    return Violation(
        profile=profile,
        rule=rule.id,
        path=finding.path,
        message=message,
        fix=fix,
        observed=finding.observed,
        expected=finding.expected,
        clause=clauses_text(rule),
        values=dict(finding.values),
    )


def finding_violation(profile: str, rule_id: str, finding: Finding) -> Violation:
    """A catalog rule's violation found outside :func:`validate` (a check that needs more than one
    table state, e.g. the guard's view of a command's first commit), worded by the rule's templates
    exactly as :func:`validate` words it."""
    return _violation(profile, RULES_BY_ID[rule_id], finding)


def _order(v: Violation) -> tuple[str, str, str, str, str, str]:
    # Like Violation's own ordering, but total even where observed/expected are None.
    return (v.profile, v.rule, v.path, v.message, v.observed or "", v.expected or "")
