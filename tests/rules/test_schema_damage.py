"""A damaged ``schemaString`` is refused as one MalformedSchemaError by every reader of it (the
checker, the planner behind an upgrade), never a raw JSON or attribute error from inside the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icecompat_writer.checking.check import check_table
from icecompat_writer.rules.schema import MalformedSchemaError
from icecompat_writer.storage import io_for
from icecompat_writer.upgrading.plan import plan_upgrade
from tests.deltalog import logbuilder as lb


def _table(root: Path, schema_string: str) -> Path:
    protocol = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    lb.LogBuilder(root).commit(0, [protocol, lb.metadata(schema_string=schema_string)])
    return root


def _nested(inner_type: object) -> str:
    inner = {"name": "b", "type": inner_type, "nullable": True, "metadata": {}}
    outer = {"name": "a", "type": {"type": "struct", "fields": [inner]}, "nullable": True, "metadata": {}}
    return json.dumps({"type": "struct", "fields": [outer]})


@pytest.mark.parametrize(
    ("schema_string", "message"),
    [
        ("{not json", r"schemaString\) is not JSON"),
        (_nested("struct"), "the type of `a.b` is a struct without a list of fields"),
        (_nested("array"), "the type of `a.b`"),
        (_nested("map"), "the type of `a.b`"),
    ],
    ids=["not-json", "bare-struct", "bare-array", "bare-map"],
)
def test_the_checker_and_the_upgrade_plan_refuse_a_damaged_schema_alike(
    tmp_path: Path, schema_string: str, message: str
) -> None:
    root = _table(tmp_path / "t", schema_string)
    before = sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file())
    with pytest.raises(MalformedSchemaError, match=message):
        check_table(root, "v3")
    with pytest.raises(MalformedSchemaError, match=message):
        plan_upgrade(root, "v3", io=io_for(root))
    assert sorted((p.name, p.read_bytes()) for p in root.rglob("*") if p.is_file()) == before


def test_field_metadata_that_is_not_an_object_counts_as_none(tmp_path: Path) -> None:
    """The checker reads such a field as one without ids; the upgrade plan gives it fresh ones."""
    field = {"name": "a", "type": "long", "nullable": True, "metadata": "x"}
    root = _table(tmp_path / "t", json.dumps({"type": "struct", "fields": [field]}))
    report = check_table(root, "v3")
    assert not report.compliant
    plan = plan_upgrade(root, "v3", io=io_for(root))
    planned = json.loads(plan.planned.metadata.schema_string)
    assert planned["fields"][0]["metadata"]["delta.columnMapping.id"] == 1
