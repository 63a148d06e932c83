"""A catalog sync needs only what the ``iceberg-catalog`` extra installs (pyiceberg, SQLAlchemy).

Moving a table forward asks which kind of catalog holds it (SQL, Glue, Hive: each has its own
compare-and-swap of the pointer). pyiceberg's Glue module imports boto3, which a REST or Hive user
does not have: asking must not import it. Spark 4.1's smoke set (tests/smoke/lines_spark_iceberg.py)
runs in an environment with the extra's packages only and moves REST and Hive tables forward after
every commit; this is the same fact without Spark.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from icecompat_writer.iceberg.catalogs import _is_glue, _is_hive


def test_asking_whether_a_catalog_is_glue_or_hive_imports_neither_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` fails, as where it is not installed
    monkeypatch.setitem(sys.modules, "thrift", None)
    monkeypatch.delitem(sys.modules, "pyiceberg.catalog.glue", raising=False)
    monkeypatch.delitem(sys.modules, "pyiceberg.catalog.hive", raising=False)
    with pytest.raises(ImportError):
        importlib.import_module("pyiceberg.catalog.glue")
    other = object()  # a REST catalog, say
    assert (_is_glue(other), _is_hive(other)) == (False, False)
    assert "pyiceberg.catalog.glue" not in sys.modules
