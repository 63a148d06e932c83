"""A real notebook, executed by a real IPython kernel: ``%load_ext icecompat_writer`` and plain code.

The kernel is this test run's own Python (a kernel spec written to a temporary JUPYTER_PATH), so it
imports the package under test; its Spark is the helper's own lean local session (local[2], UI off).
Cells run one at a time, so the test process can look at the table between them. Everything about
the table is asserted here, in the test process, from the files (``tests.support``), not from
anything the kernel says about it.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import support

# a Jupyter kernel that starts Spark
pytestmark = pytest.mark.integration

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

KERNEL = "icecompat-test-python"


@pytest.fixture
def kernel_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kernel spec that starts ``sys.executable -m ipykernel_launcher``, found through JUPYTER_PATH."""
    root = tmp_path / "jupyter"
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "icecompat test kernel",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(root))
    monkeypatch.delenv("ICECOMPAT_JARS_DIR", raising=False)
    yield root


def code(source: str, *tags: str) -> Any:
    cell = nbformat.v4.new_code_cell(textwrap.dedent(source).strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def outputs_of(cell: Any, mime: str) -> list[str]:
    """Every ``mime`` payload of a cell's display/execute results."""
    return [
        o["data"][mime]
        for o in cell.outputs
        if o["output_type"] in {"display_data", "execute_result"} and mime in o.get("data", {})
    ]


def errors_of(cell: Any) -> list[Any]:
    return [o for o in cell.outputs if o["output_type"] == "error"]


def test_plain_delta_writes_in_a_notebook_are_compat_writes(kernel_path: Path, tmp_path: Path) -> None:
    table = tmp_path / "data" / "orders"
    plain = tmp_path / "data" / "plain_parquet"
    cells = {
        "load": code("%load_ext icecompat_writer"),
        "profile": code("%icecompat writer-v1"),
        "frame": code(
            """
            from pyspark.sql import SparkSession, functions as F
            spark = SparkSession.getActiveSession()
            df = spark.sql(
                "select id, named_struct('name', concat('n', id), "
                "'geo', named_struct('lat', cast(id as double), 'lon', cast(-id as double))) as info, "
                "if(id % 2 = 0, 'even', 'odd') as part from range(6)"
            )
            print(type(df.write).__name__, spark.conf.get("spark.sql.shuffle.partitions"))
            """
        ),
        # the point of the helper: nothing icecompat-specific in the write itself
        "write": code(f'df.write.format("delta").partitionBy("part").save({str(table)!r})'),
        "check": code(f"%icecompat_check {shlex.quote(str(table))}"),
        "refused": code(
            f"""
            (df.withColumn("tiny", F.col("id").cast("tinyint"))
               .write.format("delta").mode("append").option("mergeSchema", "true").save({str(table)!r}))
            """,
            "raises-exception",
        ),
        "parquet": code(f'df.write.mode("overwrite").parquet({str(plain)!r})'),
        "unload": code(
            """
            %unload_ext icecompat_writer
            print(type(df.write).__name__)
            """
        ),
    }
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells.values())
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    (tmp_path / "work").mkdir()
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=240,
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path / "work")}},
    )
    index = {name: i for i, name in enumerate(cells)}
    before_refusal: dict[str, str] = {}
    with client.setup_kernel():
        for name, cell in cells.items():
            if name == "refused":
                before_refusal = support.tree_digest(table)
            client.execute_cell(cell, index[name])
    nbformat.write(nb, tmp_path / "executed.ipynb")  # kept with the test's files for diagnosis

    # %load_ext: the status, as HTML
    assert any("compat_write" in h for h in outputs_of(cells["load"], "text/html")), cells["load"].outputs
    assert any("writer-v1" in h for h in outputs_of(cells["profile"], "text/html"))
    printed = "".join(o.get("text", "") for o in cells["frame"].outputs if o["output_type"] == "stream")
    assert "RoutingDataFrameWriter" in printed

    # the plain write became a compat write: the WriteResult shows as HTML ...
    written = outputs_of(cells["write"], "text/html")
    assert written and "committed" in written[0] and "writer-v1" in written[0], cells["write"].outputs
    assert not errors_of(cells["write"])
    # ... and the table on disk has everything writer-v1 promises
    metadata = support.latest(table, "metaData")
    protocol = support.latest(table, "protocol")
    conf = metadata["configuration"]
    assert conf["delta.enableIcebergCompatV2"] == "true"
    assert conf["delta.enableIcebergWriterCompatV1"] == "true"
    assert conf["delta.columnMapping.mode"] == "id"
    assert {"columnMapping", "icebergCompatV2", "icebergWriterCompatV1"} <= set(protocol["writerFeatures"])
    assert metadata["partitionColumns"] == ["part"]
    schema = json.loads(metadata["schemaString"])
    expected = support.expected_field_ids(schema)
    assert {p.rsplit(".", 1)[-1] for p in expected} == {f"col-{i}" for i in expected.values()}
    assert len(expected) == 7  # id, info, info.name, info.geo, info.geo.lat, info.geo.lon, part
    adds = support.live_adds(table)
    assert {a["partitionValues"][f"col-{expected_id(schema, 'part')}"] for a in adds} == {"even", "odd"}
    assert sum(support.parquet_rows(support.data_file(table, a)) for a in adds) == 6
    for add in adds:  # every column by its physical name and id, the partition column included
        assert support.parquet_field_ids(support.data_file(table, add)) == expected, add["path"]

    # %icecompat_check: the Report as HTML, compliant
    report = outputs_of(cells["check"], "text/html")
    assert report and "compliant" in report[0] and "not compliant" not in report[0], cells["check"].outputs
    assert "writer-v1" in report[0]

    # the non-compliant write: a CompatViolation naming its rule, a table of it, and the table untouched
    errors = errors_of(cells["refused"])
    assert [e["ename"] for e in errors] == ["CompatViolation"], cells["refused"].outputs
    assert "IWC1-NO-BYTE-SHORT" in errors[0]["evalue"] and "tiny" in errors[0]["evalue"]
    shown = outputs_of(cells["refused"], "text/html")
    assert shown and "IWC1-NO-BYTE-SHORT" in shown[0] and "cast the column" in shown[0]
    assert support.tree_digest(table) == before_refusal
    assert len(support.commits(table)) == 1

    # other formats are Spark's own writes
    assert not errors_of(cells["parquet"])
    assert not (plain / "_delta_log").exists()
    assert list(plain.glob("*.parquet")), "the parquet write wrote parquet files"

    # unloading gives pyspark its own writer back
    printed = "".join(o.get("text", "") for o in cells["unload"].outputs if o["output_type"] == "stream")
    assert printed.strip() == "DataFrameWriter"


def expected_id(schema: dict[str, Any], name: str) -> int:
    field = next(f for f in schema["fields"] if f["name"] == name)
    return int(field["metadata"]["delta.columnMapping.id"])
