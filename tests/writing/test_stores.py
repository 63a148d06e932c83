"""compat_write refusals and upgrade_table on every object store the shared session reaches.

Each test runs once per store (the ``store`` fixture: ``s3a`` on moto, ``abfs`` on Azurite through the
emulator's Blob endpoint). A refused write leaves the bucket (container) byte-identical: every object
listed and hashed before and after, the abfs connector's folder-marker blobs included. The per-store
guarantees of compat_write itself are in test_object_store.py and test_azure.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icecompat_writer.checking.check import check_table
from icecompat_writer.errors import CompatViolation
from icecompat_writer.upgrading.api import upgrade_table
from icecompat_writer.writing.api import compat_write
from tests.objectstores import StoreRoot
from tests.upgrading.tables import name_partitioned
from tests.writing.test_compat_write import frame

pytestmark = pytest.mark.spark


def test_a_refused_write_leaves_the_bucket_byte_identical(
    spark: SparkSession, store: Callable[[str], StoreRoot]
) -> None:
    uri, digest = store("t")
    compat_write(frame(spark, 0, 4), uri, profile="writer-v1")
    before = digest()
    more = frame(spark, 4, 2).withColumn("tiny", F.col("id").cast("tinyint"))
    with pytest.raises(CompatViolation) as err:
        compat_write(more, uri, mode="append", profile="writer-v1", options={"mergeSchema": "true"})
    assert "IWC1-NO-BYTE-SHORT" in err.value.rules
    assert digest() == before


def test_upgrade_dry_run_and_real(spark: SparkSession, store: Callable[[str], StoreRoot]) -> None:
    uri, digest = store("plain")
    name_partitioned(spark, uri)  # column mapping name mode, partition values not in the files
    before = digest()
    assert not check_table(uri, "v3").compliant

    dry = upgrade_table(None, uri, "v3", dry_run=True)
    assert dry.needed and dry.version is None and dry.rewritten
    assert digest() == before

    done = upgrade_table(spark, uri, "v3")
    assert done.version == 1 and done.committed
    report = check_table(uri, "v3", files="all")
    assert report.compliant, report.render_text()
    assert report.files_checked == report.files_total
    rows = spark.read.format("delta").load(uri).orderBy("id").collect()
    assert [(r.id, r.p, list(r.a)) for r in rows] == [(i, str(i % 2), [i]) for i in range(6)]
