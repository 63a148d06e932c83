"""The package's extras (setup.cfg ``[options.extras_require]``) against what the docs tell users to
install and what the code imports for each feature.

The optional SDKs and catalog libraries are imported inside the functions that need them
(``storage/conditional.py``, ``iceberg/catalogs.py``); a missing one is a ``SetupError`` naming the
extra. These tests keep the three in step: every ``icecompat_writer[NAME]`` the README, the docs or
an error message names exists; each optional import resolves to a distribution the matching extra
installs (itself or through its requirements); each range holds the version constraints.txt pins.
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata as md
import importlib.util
import re
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from icecompat_writer.storage.conditional import EXTRAS as STORE_EXTRAS

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "icecompat_writer"
NAMED = re.compile(r"icecompat_writer\[([A-Za-z0-9_,\- ]+)\]")
# Imported only where no account key, SAS token or client secret is configured; the error then names
# the package itself (`pip install azure-identity`), as Azure's default credential chain is a choice.
OUTSIDE_EXTRAS = {"azure.identity"}


def _extras() -> dict[str, list[Requirement]]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    section = cfg["options.extras_require"]
    return {
        name: [Requirement(line) for line in section[name].splitlines() if line.strip()] for name in section
    }


def _pins() -> dict[str, list[str]]:
    """Every pinned version of each package in constraints.txt (one per environment marker)."""
    pins: dict[str, list[str]] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            pin = Requirement(line)
            (version,) = (s.version for s in pin.specifier)
            pins.setdefault(canonicalize_name(pin.name), []).append(version)
    return pins


@cache
def _closure(names: frozenset[str]) -> frozenset[str]:
    """The installed distributions ``names`` bring, with their (unconditional) requirements."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return frozenset(seen)


@cache
def _top_level_distributions() -> dict[str, list[str]]:
    return dict(md.packages_distributions())


def _distribution_of(module: str) -> str | None:
    """The installed distribution whose files hold ``module``; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None:
        return None
    where = Path(spec.origin) if spec.origin and spec.origin != "namespace" else None
    if where is None:
        where = Path(next(iter(spec.submodule_search_locations or [])))
    where = where.resolve()
    for dist_name in _top_level_distributions().get(module.split(".")[0], []):
        dist = md.distribution(dist_name)
        try:
            rel = where.relative_to(Path(str(dist.locate_file(""))).resolve()).as_posix()
        except ValueError:
            continue
        if any(str(f) == rel or str(f).startswith(rel + "/") for f in dist.files or []):
            return canonicalize_name(dist_name)
    return None


def _optional_imports(path: Path, roots: tuple[str, ...]) -> set[str]:
    """Modules under ``roots`` imported anywhere in ``path`` (the optional ones sit in functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] in roots}


def test_every_extra_named_in_the_docs_and_messages_exists() -> None:
    extras = _extras()
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(PACKAGE.rglob("*.py"))]
    named = {
        (path.relative_to(REPO).as_posix(), name.strip())
        for path in texts
        for match in NAMED.finditer(path.read_text(encoding="utf-8"))
        for name in match.group(1).split(",")
    }
    assert named, "no extra is named anywhere: the pattern no longer matches the docs"
    assert sorted((where, name) for where, name in named if name not in extras) == []


def test_ranges_hold_the_pinned_versions() -> None:
    pins = _pins()
    for extra, requirements in _extras().items():
        for req in requirements:
            pinned = pins.get(canonicalize_name(req.name))
            assert pinned, f"[{extra}] {req.name} has no pin in constraints.txt"
            for version in pinned:
                held = req.specifier.contains(version, prereleases=True)
                assert held, f"[{extra}] {req} excludes {version}"


def test_each_store_extra_names_its_sdk() -> None:
    """The SDK module each store's calls import is the distribution of the same dotted name, which the
    store's extra lists (checked without the SDK installed: google-cloud-storage need not be)."""
    extras = _extras()
    for family, (module, extra) in STORE_EXTRAS.items():
        listed = {canonicalize_name(r.name) for r in extras[extra]}
        assert canonicalize_name(module.replace(".", "-")) in listed, (family, module, extra)


def test_store_sdk_imports_come_with_their_extra() -> None:
    """Every cloud SDK module storage/conditional.py imports is installed by the store's extra, itself
    or through its requirements (for the SDKs installed here)."""
    extras = _extras()
    family_of = {"boto3": "s3", "botocore": "s3", "google": "gcs", "azure": "azure"}
    imports = _optional_imports(PACKAGE / "storage" / "conditional.py", tuple(family_of))
    checked = set()
    for module in sorted(imports - OUTSIDE_EXTRAS):
        extra = STORE_EXTRAS[family_of[module.split(".")[0]]][1]
        dist = _distribution_of(module)
        if dist is None:
            continue  # that SDK is not installed in this environment
        wanted = frozenset(canonicalize_name(r.name) for r in extras[extra])
        assert dist in _closure(wanted), f"{module} ({dist}) is not installed by [{extra}]"
        checked.add(extra)
    assert {"s3", "azure"} <= checked


def test_catalog_imports_come_with_the_catalog_extras() -> None:
    """Everything iceberg/catalogs.py imports from pyiceberg, SQLAlchemy and the Hive client is
    installed by ``iceberg-catalog``; ``glue`` adds what pyiceberg's own ``glue`` extra needs, and the
    catalog extra has what pyiceberg's ``sql-sqlite`` and ``hive`` extras need."""
    extras = _extras()
    catalog = frozenset(canonicalize_name(r.name) for r in extras["iceberg-catalog"])
    glue = frozenset(canonicalize_name(r.name) for r in extras["glue"])
    roots = ("pyiceberg", "sqlalchemy", "hive_metastore")
    imports = _optional_imports(PACKAGE / "iceberg" / "catalogs.py", roots)
    assert {"pyiceberg.catalog", "sqlalchemy", "hive_metastore.ttypes"} <= imports
    for module in sorted(imports):
        dist = _distribution_of(module)
        assert dist is not None and dist in _closure(catalog), f"{module} ({dist}) not in [iceberg-catalog]"

    def pyiceberg_extra(name: str) -> set[str]:
        out = set()
        for text in md.requires("pyiceberg") or []:
            req = Requirement(text)
            if (
                req.marker is not None
                and req.marker.evaluate({"extra": name})
                and not req.marker.evaluate({"extra": ""})
            ):
                out.add(canonicalize_name(req.name))
        return out

    assert pyiceberg_extra("glue") and pyiceberg_extra("glue") <= glue
    assert catalog <= glue  # Glue is one more catalog: the catalog extra's packages stay
    assert pyiceberg_extra("sql-sqlite") | pyiceberg_extra("hive") <= catalog
