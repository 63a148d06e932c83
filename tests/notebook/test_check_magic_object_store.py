"""``%icecompat_check`` on an ``s3a://`` table (moto on 127.0.0.1, standard AWS variables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecompat_writer import storage
from icecompat_writer.checking.check import Report
from icecompat_writer.notebook.ipython import icecompat_check_magic
from tests.cli.synthetic import build_table


def test_check_magic_reads_a_table_on_s3(
    s3_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_server.environ().items():
        monkeypatch.setenv(key, value)
    storage.clear_cache()
    table = build_table(tmp_path / "t", "writer-v1", files=2)
    bucket = s3_server.new_bucket()
    s3_server.upload_dir(table.root, bucket, "t")
    report = icecompat_check_magic(f"s3a://{bucket}/t --files all")
    assert isinstance(report, Report)
    assert report.compliant and report.profile == "writer-v1" and report.files_checked == 2
    assert f"s3a://{bucket}/t" in report._repr_html_()
    storage.clear_cache()
