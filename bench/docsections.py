"""Put one benchmark's section into a Markdown document: the standalone benchmarks' ``--write``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def replace_section(doc: Path, heading: str, lines: Sequence[str]) -> None:
    """Put ``lines`` (starting with ``heading``) into ``doc``, replacing an earlier section of that
    heading (up to the next ``## `` heading), else appending it."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    new = "\n".join(lines)
    if heading in text:
        start = text.index(heading)
        nxt = text.find("\n## ", start + len(heading))
        text = text[:start] + new + ("" if nxt < 0 else text[nxt + 1 :])
    else:
        text = text.rstrip() + "\n\n" + new
    doc.write_text(text.rstrip() + "\n", encoding="utf-8")
