"""docs/rules.md is generated from the catalog and must be current; every clause a rule cites exists."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from icecompat_writer.rules import CATALOG
from icecompat_writer.rules.docs import DOC_PATH, SPEC_DIR, main, render

SPECS = Path(os.environ.get("ICECOMPAT_SPECS_DIR", str(SPEC_DIR)))
REPO = Path(__file__).resolve().parents[2]


def test_committed_rules_md_is_current() -> None:
    assert DOC_PATH.read_text(encoding="utf-8") == render(), "run: python -m icecompat_writer.rules.docs"


def test_check_mode_reports_staleness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "rules.md"
    assert main(["--check", "--path", str(target)]) == 1
    assert main(["--path", str(target)]) == 0
    assert main(["--check", "--path", str(target)]) == 0
    target.write_text(render() + "edited\n", encoding="utf-8")
    assert main(["--check", "--path", str(target)]) == 1
    assert "stale" in capsys.readouterr().err


def test_every_rule_is_documented() -> None:
    text = render()
    for r in CATALOG:
        assert f"| `{r.id}` |" in text


def _slug(heading: str) -> str:
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {
        _slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+?)\s*$", path.read_text(encoding="utf-8"), re.M)
    }


@pytest.mark.skipif(not SPECS.is_dir(), reason=f"spec texts not present at {SPECS}")
def test_every_cited_clause_exists_in_the_spec_texts() -> None:
    missing = []
    for r in CATALOG:
        for clause in (r.clause, *r.also):
            file, anchor = clause.split("#")
            path = REPO / file if file.startswith("docs/") else SPECS / file
            if not path.is_file() or anchor not in _anchors(path):
                missing.append((r.id, clause))
    assert not missing
