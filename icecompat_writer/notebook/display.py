"""HTML views of the package's results, for notebooks (plain text stays the objects' own ``str``).

:class:`~icecompat_writer.checking.check.Report` renders itself (``Report._repr_html_``); the write
result and refusals get their HTML here, as plain functions of the objects, so the objects stay free
of presentation code. :mod:`icecompat_writer.notebook.ipython` registers them with IPython's HTML
formatter for the types, which is how Jupyter then shows them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING

from icecompat_writer.errors import CompatViolation, Violation

if TYPE_CHECKING:
    from icecompat_writer.planning import Change
    from icecompat_writer.writing.api import WriteResult

__all__ = ["compat_violation_html", "violation_html", "violations_table_html", "write_result_html"]

_GREEN = "#1a7f37"
_RED = "#cf222e"
_GREY = "#57606a"


def _code(text: str) -> str:
    return f"<code>{html.escape(text)}</code>"


def violations_table_html(violations: Iterable[Violation]) -> str:
    """One row per violation: profile, rule id, column, problem, observed, expected, fix."""
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(v.profile)}</td><td><b>{esc(v.rule)}</b></td>"
        f"<td>{_code(v.path or '(table)')}</td><td>{esc(v.message)}</td>"
        f"<td>{esc('' if v.observed is None else str(v.observed))}</td>"
        f"<td>{esc('' if v.expected is None else str(v.expected))}</td><td>{esc(v.fix)}</td></tr>"
        for v in violations
    )
    return (
        "<table><tr><th>profile</th><th>rule</th><th>column</th><th>problem</th><th>observed</th>"
        f"<th>expected</th><th>fix</th></tr>{rows}</table>"
    )


def compat_violation_html(err: CompatViolation) -> str:
    """A refusal: how many violations, of which rules, and each with its fix."""
    head = f"{len(err.violations)} Iceberg-compatibility violation(s)"
    if err.context:
        head += f" {err.context}"
    rules = ", ".join(err.rules)
    return (
        f"<div class='icecompat-violation'><p><b style='color:{_RED}'>CompatViolation</b>: "
        f"{html.escape(head)} &mdash; rule(s) {html.escape(rules)}</p>"
        f"{violations_table_html(err.violations)}</div>"
    )


def violation_html(v: Violation) -> str:
    return violations_table_html([v])


def _change_rows(changes: Iterable[Change]) -> str:
    esc = html.escape
    rows = []
    for c in changes:
        # planning.fixes.Change: rule, path, what, why (anything else is shown as its text)
        rule = getattr(c, "rule", "")
        path = getattr(c, "path", "")
        what = getattr(c, "what", str(c))
        why = getattr(c, "why", "")
        rows.append(
            f"<tr><td>{esc(rule)}</td><td>{_code(path or '(table)')}</td><td>{esc(what)}</td>"
            f"<td style='color:{_GREY}'>{esc(why)}</td></tr>"
        )
    return "".join(rows)


def write_result_html(result: WriteResult) -> str:
    """A :class:`~icecompat_writer.writing.api.WriteResult`: what was committed and what the plan changed."""
    esc = html.escape
    if result.version is None:
        return (
            f"<p><b>nothing written</b> to {_code(result.target)} ({esc(result.profile)}, mode "
            f"{esc(result.mode)}): {esc(str(result.skipped))}</p>"
        )
    where = _code(result.target)
    if result.location != result.target:
        where += f" at {_code(result.location)}"
    parts = [
        f"<p><b style='color:{_GREEN}'>committed</b> version <b>{result.version}</b> of {where} "
        f"&mdash; profile <b>{esc(result.profile)}</b>, mode {esc(result.mode)}: "
        f"{len(result.files)} file(s), {result.rows} row(s)"
        + (f", {result.removed_files} file(s) removed" if result.removed_files else "")
        + (f", {result.attempts} attempts" if result.attempts > 1 else "")
        + "</p>"
    ]
    if result.changes:
        parts.append(
            f"<details><summary>{len(result.changes)} change(s) the plan made</summary>"
            "<table><tr><th>rule</th><th>column</th><th>change</th><th>why</th></tr>"
            f"{_change_rows(result.changes)}</table></details>"
        )
    return "".join(parts)
