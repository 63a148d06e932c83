"""Every rule id any layer raises is a catalog entry, documented with its stages and params."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icecompat_writer.rules.catalog import CATALOG, LAYER_RULES, RULES, RULES_BY_ID, layer_rule
from icecompat_writer.rules.docs import render
from icecompat_writer.rules.export import export_catalog
from icecompat_writer.rules.model import Stage
from icecompat_writer.writing.compose import write_violation

PACKAGE = Path(__file__).resolve().parents[2] / "icecompat_writer"
RULE_LITERAL = re.compile(
    r'"((?:DELTA-WRITE|ICEBERG-EMIT|UPGRADE|ICV[23]|IWC[13]|PROTO|CM|DELTA|PROFILE)-[A-Z0-9-]+)"'
)


def test_every_rule_id_in_the_source_is_in_the_catalog() -> None:
    used = {
        m.group(1)
        for path in PACKAGE.rglob("*.py")
        for m in RULE_LITERAL.finditer(path.read_text(encoding="utf-8"))
    }
    assert {i for i in used if i.startswith(("DELTA-WRITE-", "ICEBERG-EMIT-", "UPGRADE-"))} == {
        r.id for r in LAYER_RULES
    }
    assert used - set(RULES_BY_ID) == set()


def test_every_rule_says_where_it_applies() -> None:
    assert RULES == (*CATALOG, *LAYER_RULES)
    assert all(r.stages for r in RULES)
    assert {s for r in RULES for s in r.stages} == set(Stage)
    assert all(r.kind is None and r.layer for r in LAYER_RULES)


def test_a_layer_cannot_raise_an_id_the_catalog_lacks() -> None:
    with pytest.raises(ValueError, match="DELTA-WRITE-NOT-A-RULE"):
        write_violation("DELTA-WRITE-NOT-A-RULE", "", "m", "f")
    with pytest.raises(ValueError, match="ICV3-ENABLED"):
        layer_rule("ICV3-ENABLED")  # a kind rule is evaluated by validate, never raised by hand


def test_docs_and_export_list_layer_rules_with_their_params() -> None:
    text = render()
    for r in LAYER_RULES:
        assert f"| `{r.id}` | {', '.join(s.value for s in r.stages)} | `{r.layer}` |" in text
    assert "`fs.`, `hadoop.`, `parquet.`" in text
    assert "allowed: `appendOnly`, `columnMapping`, `icebergWriterCompatV1`" in text
    exported = export_catalog()
    assert [r["id"] for r in exported["layer_rules"]] == [r.id for r in LAYER_RULES]
    assert exported["rules"][0]["stages"] == ["plan", "commit"]
