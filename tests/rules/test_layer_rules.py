"""Every rule id any layer raises is a catalog entry, documented with its stages and params."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icecompat_writer.rules.catalog import CATALOG, LAYER_RULES, RULES, RULES_BY_ID, layer_rule
from icecompat_writer.rules.docs import render
from icecompat_writer.rules.export import export_catalog
from icecompat_writer.rules.model import Stage, template_fields
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
        write_violation("DELTA-WRITE-NOT-A-RULE", "")
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


def test_no_layer_words_a_violation_itself() -> None:
    """Violations are made by the rules package (catalog templates); elsewhere only rebuilt from
    their own JSON (``Violation(**v)``), never spelled out with a message of the layer's own."""
    spelled = re.compile(r"\bViolation\(\s*profile=")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "rules" and spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_layer_rule_wordings_are_named_templates() -> None:
    for r in LAYER_RULES:
        for variant in ("", *r.variants):
            for template in r.templates(variant):
                fields = template_fields(template)
                assert all(name.isidentifier() for name in fields), (r.id, variant, template)
    with pytest.raises(KeyError, match="no wording variant 'nope'"):
        layer_rule("DELTA-WRITE-PARTITION-COLUMN").templates("nope")


def test_a_layer_violation_is_its_catalog_template_filled_in() -> None:
    v = write_violation("DELTA-WRITE-PARTITION-COLUMN", "p", variant="type", observed="struct")
    rule = layer_rule("DELTA-WRITE-PARTITION-COLUMN")
    message, fix = rule.variants["type"]
    assert (v.message, v.fix) == (message.format(observed="struct"), fix)
    assert v.message == "Delta cannot partition by a column of type struct"
    with pytest.raises(KeyError, match="columns"):
        write_violation("DELTA-WRITE-PARTITION-COLUMN", "p")  # its own wording names the columns

