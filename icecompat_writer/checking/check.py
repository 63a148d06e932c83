"""Auditing an existing Delta table against a profile, from its log and its Parquet footers only.

No Spark: the log is replayed by :mod:`icecompat_writer.deltalog`, footers are read by
:mod:`.footers`, and the verdict comes from the same rule catalog the writer enforces, so a table
``compat_write`` commits always checks clean and the checker never invents rules of its own.
"""

from __future__ import annotations

import html
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icecompat_writer.checking.footers import file_facts
from icecompat_writer.deltalog.findings import LogFinding
from icecompat_writer.deltalog.snapshot import Snapshot, read_snapshot
from icecompat_writer.errors import IcecompatError, Violation
from icecompat_writer.facts import DataFileFacts

__all__ = ["Report", "check_table", "declared_profile", "parse_files_option"]

# table property -> the profile a table declares by setting it to true (most specific first)
_DECLARING_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("delta.enableIcebergWriterCompatV3", "writer-v3"),
    ("delta.enableIcebergWriterCompatV1", "writer-v1"),
    ("delta.enableIcebergCompatV3", "v3"),
)


def declared_profile(configuration: Any) -> str | None:
    """The profile a table declares through its properties, or None when it declares none."""
    for key, profile in _DECLARING_PROPERTIES:
        if str(configuration.get(key, "")).lower() == "true":
            return profile
    return None


def parse_files_option(text: str) -> tuple[str, int]:
    """``all`` | ``none`` | ``sample:N`` -> (kind, N)."""
    t = text.strip().lower()
    if t in {"all", "none"}:
        return t, 0
    if t.startswith("sample:"):
        try:
            n = int(t.split(":", 1)[1])
        except ValueError:
            n = -1
        if n > 0:
            return "sample", n
    raise IcecompatError(f"--files takes all, none or sample:N (N > 0), not {text!r}")


@dataclass(frozen=True)
class Report:
    """The verdict on one table at one version, for one profile (or for each candidate profile)."""

    table: str
    version: int
    profile: str | None
    declared: str | None
    violations: tuple[Violation, ...]
    findings: tuple[LogFinding, ...]
    files_total: int
    files_checked: int
    candidates: dict[str, int] = field(default_factory=dict)

    @property
    def compliant(self) -> bool:
        """True when the profile checked has no violation and the log read cleanly."""
        return self.profile is not None and not self.violations and not self.findings

    def by_rule(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = {}
        for v in self.violations:
            out.setdefault(v.rule, []).append(v)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "version": self.version,
            "profile": self.profile,
            "declared_profile": self.declared,
            "compliant": self.compliant,
            "files_total": self.files_total,
            "files_checked": self.files_checked,
            "candidates": self.candidates,
            "violations": [
                {
                    "profile": v.profile,
                    "rule": v.rule,
                    "path": v.path,
                    "message": v.message,
                    "observed": v.observed,
                    "expected": v.expected,
                    "fix": v.fix,
                    "clause": v.clause,
                }
                for v in self.violations
            ],
            "findings": [
                {"code": str(f.code), "message": f.message, "file": getattr(f, "file", None)}
                for f in self.findings
            ],
        }

    def render_text(self) -> str:
        """A plain-text report (what terminals and non-notebook reprs show)."""
        lines = [f"table {self.table} at version {self.version}"]
        if self.profile is None:
            lines.append("declares no profile; violations per candidate profile:")
            for name, count in self.candidates.items():
                lines.append(f"  {name}: {'compliant' if count == 0 else f'{count} violation(s)'}")
            return "\n".join(lines)
        status = "COMPLIANT" if self.compliant else "NOT COMPLIANT"
        lines.append(
            f"profile {self.profile}: {status} ({len(self.violations)} violation(s), "
            f"{len(self.findings)} log finding(s), {self.files_checked}/{self.files_total} file footers read)"
        )
        for rule, items in sorted(self.by_rule().items()):
            lines.append(f"  {rule} ({len(items)})")
            for v in items[:20]:
                lines.append(f"    - {v.render()}")
            if len(items) > 20:
                lines.append(f"    ... and {len(items) - 20} more")
        for f in self.findings:
            lines.append(f"  log finding {f.code}: {f.message}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render_text()

    def _repr_html_(self) -> str:
        esc = html.escape
        status = "compliant" if self.compliant else "not compliant"
        color = "#1a7f37" if self.compliant else "#cf222e"
        head = (
            f"<h4>{esc(self.table)} &mdash; version {self.version}</h4>"
            f"<p>profile <b>{esc(str(self.profile))}</b>: <b style='color:{color}'>{status}</b> "
            f"({len(self.violations)} violation(s), {self.files_checked}/{self.files_total} footers read)</p>"
        )
        if self.profile is None:
            rows = "".join(f"<tr><td>{esc(n)}</td><td>{c}</td></tr>" for n, c in self.candidates.items())
            return head + f"<table><tr><th>profile</th><th>violations</th></tr>{rows}</table>"
        rows = "".join(
            f"<tr><td>{esc(v.rule)}</td><td><code>{esc(v.path or '(table)')}</code></td>"
            f"<td>{esc(v.message)}</td><td>{esc(str(v.observed))}</td><td>{esc(str(v.expected))}</td>"
            f"<td>{esc(v.fix)}</td></tr>"
            for v in self.violations
        )
        table = (
            "<table><tr><th>rule</th><th>column</th><th>problem</th><th>observed</th><th>expected</th>"
            f"<th>fix</th></tr>{rows}</table>"
            if rows
            else ""
        )
        return head + table


def _select_files(snapshot: Snapshot, files: str) -> Sequence[Any]:
    kind, n = parse_files_option(files)
    if kind == "none":
        return ()
    adds = list(snapshot.add_files)
    if kind == "sample" and n < len(adds):
        return random.Random(snapshot.version).sample(adds, n)
    return adds


def check_table(
    path: str | Path,
    profile: str | None = None,
    *,
    files: str = "all",
    version: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Check the table at ``path`` against ``profile`` (default: the one it declares).

    Without a profile and with none declared, every profile is evaluated and ``candidates`` tells how
    many violations each has. ``files`` chooses which data files' footers are read: ``all``, ``none`` or
    ``sample:N``. ``progress(done, total)`` is called as footers are read.
    """
    from icecompat_writer.planning import PROFILES, validate

    snapshot = read_snapshot(path, version)
    declared = declared_profile(snapshot.metadata.configuration)
    chosen = profile or declared
    if chosen is not None and chosen not in PROFILES:
        raise IcecompatError(f"unknown profile {chosen!r}; use one of {', '.join(PROFILES)}")
    selected = _select_files(snapshot, files)
    facts: list[DataFileFacts] = []
    for i, add in enumerate(selected, 1):
        facts.append(file_facts(snapshot.table_root, add, read_footer=True))
        if progress is not None:
            progress(i, len(selected))
    # The claims of every file (numRecords, partition values) are checked even when footers are not read.
    read_paths = {f.path for f in facts}
    facts.extend(
        file_facts(snapshot.table_root, a, read_footer=False)
        for a in snapshot.add_files
        if a.path not in read_paths
    )

    def run(p: str) -> list[Violation]:
        return list(validate(p, snapshot.metadata, snapshot.protocol, None, files=facts))

    if chosen is None:
        candidates = {p: len(run(p)) for p in PROFILES}
        return Report(
            str(snapshot.table_root),
            snapshot.version,
            None,
            None,
            (),
            tuple(snapshot.findings),
            len(snapshot.add_files),
            len(selected),
            candidates,
        )
    return Report(
        str(snapshot.table_root),
        snapshot.version,
        chosen,
        declared,
        tuple(sorted(run(chosen))),
        tuple(snapshot.findings),
        len(snapshot.add_files),
        len(selected),
    )


def reports_to_json(reports: Iterable[Report]) -> str:
    return json.dumps([r.to_json() for r in reports], indent=2)
