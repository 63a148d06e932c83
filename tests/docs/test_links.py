"""Every link between the README and the docs leads somewhere: the file exists and, for a link with
``#anchor``, the page has a heading of that slug (the GitHub rule tests/rules/test_docs.py uses for
the rule catalog's clauses). Every ``docs/NAME.md`` the code, the tests or the docs mention exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [
    REPO / "README.md",
    REPO / "conf" / "README.md",
    REPO / "tests" / "README.md",
    *(REPO / "docs").glob("*.md"),
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MENTION = re.compile(r"\bdocs/([a-z0-9_-]+\.md)\b")
# The command line's page is maintained with the CLI's code; links to it are checked once it exists.
WITH_THE_CLI = {REPO / "docs" / "cli.md"}


def _slug(heading: str) -> str:
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # no code-block comments
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.M)}


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # an external address
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if path in WITH_THE_CLI and not path.exists():
                continue
            if not path.exists():
                broken.append((page.relative_to(REPO).as_posix(), target, "no such file"))
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append((page.relative_to(REPO).as_posix(), target, "no such heading"))
    assert broken == []


def test_every_docs_page_mentioned_exists() -> None:
    sources = [*PAGES, *(REPO / "icecompat_writer").rglob("*.py"), *(REPO / "tests").rglob("*.py")]
    missing = {
        (src.relative_to(REPO).as_posix(), name)
        for src in sources
        for name in MENTION.findall(src.read_text(encoding="utf-8"))
        if not (REPO / "docs" / name).exists() and REPO / "docs" / name not in WITH_THE_CLI
    }
    assert sorted(missing) == []


def test_the_docs_index_lists_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    unlisted = [
        p.name
        for p in sorted((REPO / "docs").glob("*.md"))
        if p.name != "README.md" and f"({p.name}" not in index
    ]
    assert unlisted == []
