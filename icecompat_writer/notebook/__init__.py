"""The notebook helper: plain ``df.write`` Delta writes become Iceberg-compatible compat writes.

In Jupyter/IPython::

    %load_ext icecompat_writer          # starts (or checks) the session, routes df.write Delta writes
    %icecompat writer-v1                 # choose the profile (default v3)
    df.write.format("delta").partitionBy("region").save("/data/orders")   # -> WriteResult
    %icecompat_check /data/orders        # the table's compliance Report
    %unload_ext icecompat_writer         # pyspark's own df.write again

Anywhere else: ``icecompat_writer.notebook.enable(spark=None, profile=None)`` and ``disable()``.
Importing this package starts no JVM.
"""

from __future__ import annotations

from icecompat_writer.notebook.core import NotebookStatus, disable, enable, status

__all__ = ["NotebookStatus", "disable", "enable", "status"]
