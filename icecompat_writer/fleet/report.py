"""One report for a run over many tables: a line per table in text, one JSON document, one HTML page.

The HTML page is self-contained (inline style, no script, no external resource), so a platform team
can publish it as a static file; every value is escaped.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass, field

from icecompat_writer.schema import JsonDict

__all__ = ["JSON_FORMAT", "FleetReport", "TableOutcome"]

JSON_FORMAT = "icecompat-fleet/1"

# verdict -> (kind, colour): kind decides the exit code (ok 0, violations 1, error 2)
VERDICTS: dict[str, tuple[str, str]] = {
    "compliant": ("ok", "#1a7f37"),
    "no profile": ("ok", "#9a6700"),
    "not compliant": ("violations", "#cf222e"),
    "upgraded": ("ok", "#1a7f37"),
    "would upgrade": ("ok", "#0969da"),
    "already compliant": ("ok", "#1a7f37"),
    "refused": ("violations", "#cf222e"),
    "converted": ("ok", "#1a7f37"),
    "current": ("ok", "#1a7f37"),
    "would convert": ("ok", "#0969da"),
    "error": ("error", "#8250df"),
}


@dataclass(frozen=True)
class TableOutcome:
    """What one command did to one table.

    ``table`` is the catalog name (``db.tbl``) or the path given; ``rules`` the rule ids the table
    breaks; ``delta_version`` the version read; ``iceberg_version`` the last Delta version its Iceberg
    metadata holds (None: none); ``catalog`` the Iceberg catalog's state for the table, when one was
    asked about; ``error`` the cause of an ``error`` verdict (exception type and message).
    """

    table: str
    location: str | None
    verdict: str
    profile: str | None = None
    rules: tuple[str, ...] = ()
    delta_version: int | None = None
    iceberg_version: int | None = None
    catalog: JsonDict | None = None
    detail: str = ""
    error: str | None = None
    seconds: float = 0.0

    @property
    def kind(self) -> str:
        return VERDICTS.get(self.verdict, ("error", ""))[0]

    @property
    def lag(self) -> int | None:
        """Delta versions not yet in Iceberg (None when the table has no Iceberg metadata)."""
        if self.delta_version is None or self.iceberg_version is None:
            return None
        return max(0, self.delta_version - self.iceberg_version)

    def catalog_text(self) -> str:
        c = self.catalog
        if not c:
            return ""
        where = f"{c.get('catalog')}: {c.get('identifier')}"
        if c.get("error"):
            return f"{where} unreadable ({c['error']})"
        if not c.get("registered"):
            return f"{where} not registered"
        return f"{where} at Delta version {c.get('delta_version')}"

    def to_json(self) -> JsonDict:
        return {
            "table": self.table,
            "location": self.location,
            "verdict": self.verdict,
            "profile": self.profile,
            "rules": list(self.rules),
            "delta_version": self.delta_version,
            "iceberg": {"converted_version": self.iceberg_version, "lag": self.lag},
            "catalog": self.catalog,
            "detail": self.detail,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class FleetReport:
    """The outcomes of one command over many tables, in the order the tables were listed."""

    command: str
    source: str
    outcomes: list[TableOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o.verdict for o in self.outcomes).items()))

    def exit_code(self) -> int:
        """2 if any table failed, else 1 if any broke a rule or was refused, else 0."""
        kinds = {o.kind for o in self.outcomes}
        return 2 if "error" in kinds else 1 if "violations" in kinds else 0

    def to_json(self) -> JsonDict:
        return {
            "format": JSON_FORMAT,
            "command": self.command,
            "source": self.source,
            "tables": len(self.outcomes),
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "outcomes": [o.to_json() for o in self.outcomes],
        }

    def render_json(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def render_text(self) -> str:
        counts = ", ".join(f"{n} {v}" for v, n in self.counts().items()) or "no tables"
        lines = [f"icecompat {self.command} over {self.source}: {len(self.outcomes)} table(s): {counts}"]
        for o in self.outcomes:
            parts = [f"{o.table}: {o.verdict.upper()}"]
            if o.profile:
                parts.append(f"profile {o.profile}")
            if o.delta_version is not None:
                parts.append(f"Delta version {o.delta_version}")
            if o.lag is not None:
                parts.append(f"Iceberg lag {o.lag}")
            if o.rules:
                parts.append("rules " + ", ".join(o.rules))
            if o.catalog:
                parts.append(o.catalog_text())
            if o.detail:
                parts.append(o.detail)
            if o.error:
                parts.append(o.error)
            lines.append("  " + "; ".join(parts))
        return "\n".join(lines) + "\n"

    def render_html(self) -> str:
        esc = html.escape
        badges = "".join(
            f'<span class="badge" style="background:{VERDICTS.get(v, ("", "#57606a"))[1]}">'
            f"{esc(v)}: {n}</span>"
            for v, n in self.counts().items()
        )
        rows = []
        for o in self.outcomes:
            colour = VERDICTS.get(o.verdict, ("", "#57606a"))[1]
            lag = "" if o.lag is None else str(o.lag)
            iceberg = "" if o.iceberg_version is None else f"v{o.iceberg_version} (lag {lag})"
            cause = o.error or o.detail
            rows.append(
                f'<tr data-table="{esc(o.table)}" data-verdict="{esc(o.verdict)}">'
                f'<td class="name">{esc(o.table)}<div class="loc">{esc(o.location or "")}</div></td>'
                f"<td>{esc(o.profile or '')}</td>"
                f'<td><b style="color:{colour}">{esc(o.verdict)}</b></td>'
                f"<td>{esc(', '.join(o.rules))}</td>"
                f"<td>{'' if o.delta_version is None else o.delta_version}</td>"
                f"<td>{esc(iceberg)}</td>"
                f"<td>{esc(o.catalog_text())}</td>"
                f'<td class="cause">{esc(cause)}</td>'
                "</tr>"
            )
        title = f"icecompat {self.command}: {self.source}"
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)}</title><style>"
            "body{font-family:system-ui,sans-serif;margin:2em;color:#1f2328}"
            "table{border-collapse:collapse;width:100%}"
            "th,td{border-bottom:1px solid #d0d7de;padding:6px 8px;text-align:left;vertical-align:top}"
            "th{background:#f6f8fa}.loc{color:#57606a;font-size:0.8em;word-break:break-all}"
            ".cause{font-size:0.85em;max-width:30em;word-break:break-word}"
            ".badge{color:#fff;border-radius:1em;padding:2px 10px;margin-right:6px;font-size:0.9em}"
            "</style></head><body>"
            f"<h1>{esc(title)}</h1>"
            f'<p id="summary">{len(self.outcomes)} table(s) in {self.seconds:.1f} s {badges}</p>'
            '<table id="tables"><thead><tr><th>table</th><th>profile</th><th>verdict</th>'
            "<th>rules broken</th><th>Delta version</th><th>Iceberg</th><th>catalog</th>"
            "<th>cause / detail</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            "</body></html>\n"
        )
