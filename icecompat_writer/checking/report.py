"""The checker's verdict on one table: the :class:`Report` model and its text, JSON and notebook views."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from icecompat_writer.errors import Violation
from icecompat_writer.evidence.file_reads import CheckFinding
from icecompat_writer.schema import JsonDict

__all__ = ["JSON_FORMAT", "Report", "reports_to_json", "violation_file"]

JSON_FORMAT = "icecompat-check/1"
"""Identifies the shape of :meth:`Report.to_json`; bumped whenever a key changes meaning or goes away."""


def violation_file(v: Violation) -> str | None:
    """The data file a file-level violation is about (its path as in the log), None for the others."""
    file = v.values.get("file")
    return file if isinstance(file, str) else None


@dataclass(frozen=True)
class Report:
    """The verdict on one table at one version, for one profile (or for each candidate profile).

    ``profile`` is the profile checked: the one asked for, else the one the table declares. When it
    is None the table declares none and none was asked for: ``candidates`` then maps every profile to
    its violation count and ``violations`` holds the violations of all of them (each names its
    profile). ``files_total`` counts live AddFiles, ``files_selected`` the footers the ``files``
    option chose, ``files_checked`` the footers actually read.
    """

    table: str
    version: int
    profile: str | None
    declared: str | None
    violations: tuple[Violation, ...]
    findings: tuple[CheckFinding, ...]
    files_total: int
    files_checked: int
    candidates: dict[str, int] = field(default_factory=dict)
    files_selected: int = 0
    files_option: str = "all"
    checkpoint_version: int | None = None
    deletion_vectors_read: int = 0

    @property
    def errors(self) -> tuple[CheckFinding, ...]:
        """The findings that make the table non-compliant."""
        return tuple(f for f in self.findings if f.blocking)

    @property
    def compliant(self) -> bool:
        """True when a profile was checked, nothing violates it and nothing blocked the audit."""
        return self.profile is not None and not self.violations and not self.errors

    def by_rule(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = {}
        for v in self.violations:
            out.setdefault(v.rule, []).append(v)
        return out

    def to_json(self) -> JsonDict:
        """Everything in the report as JSON-ready data (``JSON_FORMAT`` names the shape)."""
        return {
            "format": JSON_FORMAT,
            "table": self.table,
            "version": self.version,
            "checkpoint_version": self.checkpoint_version,
            "profile": self.profile,
            "declared_profile": self.declared,
            "compliant": self.compliant,
            "files": {
                "option": self.files_option,
                "total": self.files_total,
                "footers_selected": self.files_selected,
                "footers_read": self.files_checked,
                "deletion_vectors_read": self.deletion_vectors_read,
            },
            "candidates": dict(self.candidates),
            "summary": {
                "violations": len(self.violations),
                "rules": {rule: len(items) for rule, items in sorted(self.by_rule().items())},
                "errors": len(self.errors),
                "warnings": len(self.findings) - len(self.errors),
            },
            "violations": [
                {
                    "profile": v.profile,
                    "rule": v.rule,
                    "path": v.path,
                    "file": violation_file(v),
                    "message": v.message,
                    "observed": v.observed,
                    "expected": v.expected,
                    "fix": v.fix,
                    "clause": v.clause,
                }
                for v in self.violations
            ],
            "findings": [f.to_json() for f in self.findings],
        }

    def verdict(self) -> str:
        """One line: what was checked and the outcome."""
        head = f"table {self.table} at version {self.version}"
        footers = f"{self.files_checked}/{self.files_total} data file footers read"
        if self.profile is None:
            return f"{head}: declares no profile ({footers})"
        status = "COMPLIANT" if self.compliant else "NOT COMPLIANT"
        return (
            f"{head}, profile {self.profile}: {status} ({len(self.violations)} violation(s), "
            f"{len(self.errors)} error finding(s), {footers})"
        )

    def render_text(self, limit: int = 20) -> str:
        """A plain-text report (what terminals and non-notebook reprs show), ``limit`` lines per rule."""
        lines = [self.verdict()]
        if self.profile is None:
            lines.append("violations per candidate profile:")
            for name, count in self.candidates.items():
                lines.append(f"  {name}: {'compliant' if count == 0 else f'{count} violation(s)'}")
        for rule, items in sorted(self.by_rule().items()):
            lines.append(f"  {rule} ({len(items)})")
            for v in items[:limit]:
                lines.append(f"    - {v.render()}")
            if len(items) > limit:
                lines.append(f"    ... and {len(items) - limit} more")
        for f in self.findings:
            lines.append(f"  {f.render()}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render_text()

    def _repr_html_(self) -> str:
        """The notebook view: verdict, candidates, violations and findings as tables."""
        esc = html.escape
        status = "compliant" if self.compliant else "not compliant"
        color = "#1a7f37" if self.compliant else "#cf222e"
        checked = f"profile <b>{esc(self.profile)}</b>" if self.profile is not None else "declares no profile"
        parts = [
            f"<h4>{esc(self.table)} &mdash; version {self.version}</h4>",
            f"<p>{checked}: <b style='color:{color}'>{status}</b> "
            f"({len(self.violations)} violation(s), {len(self.errors)} error finding(s), "
            f"{self.files_checked}/{self.files_total} footers read)</p>",
        ]
        if self.profile is None:
            rows = "".join(f"<tr><td>{esc(n)}</td><td>{c}</td></tr>" for n, c in self.candidates.items())
            parts.append(f"<table><tr><th>profile</th><th>violations</th></tr>{rows}</table>")
        if self.violations:
            rows = "".join(
                f"<tr><td>{esc(v.profile)}</td><td>{esc(v.rule)}</td>"
                f"<td><code>{esc(v.path or '(table)')}</code></td>"
                f"<td><code>{esc(violation_file(v) or '')}</code></td><td>{esc(v.message)}</td>"
                f"<td>{esc(str(v.observed))}</td><td>{esc(str(v.expected))}</td><td>{esc(v.fix)}</td></tr>"
                for v in self.violations
            )
            parts.append(
                "<table><tr><th>profile</th><th>rule</th><th>column</th><th>file</th><th>problem</th>"
                f"<th>observed</th><th>expected</th><th>fix</th></tr>{rows}</table>"
            )
        if self.findings:
            rows = "".join(
                f"<tr><td>{esc(f.severity.value)}</td><td>{esc(f.code)}</td>"
                f"<td><code>{esc(f.file or '')}</code></td><td>{esc(f.message)}</td></tr>"
                for f in self.findings
            )
            parts.append(
                "<table><tr><th>severity</th><th>finding</th><th>file</th><th>message</th></tr>"
                f"{rows}</table>"
            )
        return "".join(parts)


def reports_to_json(reports: Iterable[Report]) -> str:
    return json.dumps([r.to_json() for r in reports], indent=2)
