"""Every public exception is importable from the top package, as the docs write it
(``from icecompat_writer import UnsupportedSparkVersion``)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import icecompat_writer
from icecompat_writer import errors

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "icecompat_writer"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "conf" / "README.md"]
CLASS = re.compile(r"^class ([A-Z]\w*)\(", re.M)


def _exported(name: str) -> object:
    assert name in icecompat_writer.__all__, f"{name} is not in icecompat_writer.__all__"
    namespace: dict[str, object] = {}
    exec(f"from icecompat_writer import {name}", namespace)  # the import a user writes
    return namespace[name]


def test_every_exception_of_errors_py_is_exported() -> None:
    defined = [
        obj
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    ]
    assert errors.IcecompatError in defined and errors.UnsupportedSparkVersion in defined
    for cls in defined:
        assert _exported(cls.__name__) is cls


def test_every_subclass_of_the_base_error_anywhere_in_the_package_is_exported() -> None:
    """Classes deriving from IcecompatError next to the code that raises them (catalogs, footers, ...)."""
    found: dict[str, type] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = CLASS.findall(path.read_text(encoding="utf-8"))
        if not names:
            continue
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if module.startswith(("icecompat_writer.jvm.bridge", "icecompat_writer.notebook")):
            continue  # py4j / IPython at import; their modules define no exception (checked below)
        loaded = importlib.import_module(module)
        for name in names:
            obj = getattr(loaded, name, None)
            if inspect.isclass(obj) and issubclass(obj, icecompat_writer.IcecompatError):
                found[name] = obj
    assert {"CatalogError", "UnsupportedSparkVersion", "UpgradeRefused"} <= set(found)
    for name, cls in found.items():
        assert _exported(name) is cls, name
    for skipped in ("jvm/bridge.py", "notebook"):
        for path in [PACKAGE / skipped] if skipped.endswith(".py") else (PACKAGE / skipped).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"^class \w+\(\w*(Error|Violation|Exception)\w*\)", text, re.M), path


def test_every_exception_the_docs_name_is_exported() -> None:
    """Names in the docs that look like exceptions and are defined in the package (a Java class such as
    ``NoSuchMethodError`` is not)."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    defined = set(CLASS.findall(source))
    named = set()
    for doc in DOCS:
        named |= set(
            re.findall(
                r"\b([A-Z]\w+(?:Error|Violation|Refused|Version|Supported|Mismatch|Warning))\b",
                doc.read_text(encoding="utf-8"),
            )
        )
    ours = named & defined
    assert "UnsupportedSparkVersion" in ours
    for name in sorted(ours):
        assert inspect.isclass(_exported(name)), name
