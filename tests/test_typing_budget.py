"""How much of the package is typed ``Any``: a budget that only comes down.

``Any`` belongs where the package meets a library without types (py4j's Java objects, pyiceberg's
catalogs, pyarrow's and fastavro's values, Thrift decoded by hand, ``json.loads`` where the JSON is
parsed). Everywhere else a value has a precise type: the typed schema (``icecompat_writer.schema``),
``JsonObject``/``JsonDict`` for JSON that stays JSON (``object`` values, narrowed where read), a
Protocol or a TypedDict. ruff's ANN401 refuses an argument or answer typed ``Any`` outside the modules
``pyproject.toml`` names; this test caps the lines that mention ``Any`` at all, so the count can fall
and not rise. Lower ``BUDGET`` with every change that removes some.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "icecompat_writer"
BUDGET = 232
_ANY = re.compile(r"\bAny\b")


def _lines_with_any() -> list[str]:
    out: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _ANY.search(line):
                out.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    return out


def test_lines_mentioning_any_stay_within_the_budget() -> None:
    found = _lines_with_any()
    assert len(found) <= BUDGET, (
        f"{len(found)} lines of icecompat_writer mention Any (budget {BUDGET}); type the new ones "
        "precisely, or mark a real boundary with an untyped library:\n" + "\n".join(found)
    )


def test_every_ann401_exception_says_why() -> None:
    """A line that opts out of ANN401 names the untyped library or value it meets."""
    bare = [
        line
        for line in _lines_with_any()
        if "noqa: ANN401" in line and not re.search(r"noqa: ANN401\s+#\s*\S", line)
    ]
    assert not bare, "ANN401 exceptions without a reason:\n" + "\n".join(bare)
