"""check_table on Azure Blob (Azurite on 127.0.0.1): the same verdict and findings as on local disk.

Tables are built locally (synthetic, tests/cli/synthetic.py), uploaded with the Azure SDK, and checked
through the standard ``AZURE_STORAGE_CONNECTION_STRING``, under both URI forms Spark uses for a
container (``abfss://`` on the DFS host name, ``wasbs://`` on the Blob host name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icecompat_writer.checking.check import check_table
from tests.checking.test_check import codes_of, rows_of
from tests.cli.synthetic import build_table
from tests.deltalog import logbuilder as lb

URIS = {
    "abfss": "abfss://{container}@devstoreaccount1.dfs.core.windows.net/warehouse/t",
    "wasbs": "wasbs://{container}@devstoreaccount1.blob.core.windows.net/warehouse/t",
}


@pytest.mark.parametrize("scheme", sorted(URIS))
def test_compliant_table_checks_the_same_on_azurite(azure_env: Any, tmp_path: Path, scheme: str) -> None:
    table = build_table(tmp_path / "t", "writer-v1", files=4)
    lb.LogBuilder(table.root).commit(1, [lb.commit_info("WRITE")])
    local = check_table(table.root, files="all")
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "warehouse/t")
    before = azure_env.container_digest(container)

    uri = URIS[scheme].format(container=container)
    remote = check_table(uri, files="all")

    assert remote.compliant and local.compliant
    assert (remote.profile, remote.version, remote.files_checked) == ("writer-v1", 1, 4)
    assert rows_of(remote) == rows_of(local) == []
    assert remote.table == uri
    assert azure_env.container_digest(container) == before  # a check writes nothing


def test_a_table_that_misses_its_profile_gets_the_same_findings_on_azurite(
    azure_env: Any, tmp_path: Path
) -> None:
    table = build_table(tmp_path / "t", "v3", files=2)
    local = check_table(table.root, "writer-v1", files="all")
    container = azure_env.new_container()
    azure_env.upload_dir(table.root, container, "warehouse/t")

    remote = check_table(URIS["abfss"].format(container=container), "writer-v1", files="all")

    assert not remote.compliant
    assert codes_of(remote) == codes_of(local)
    assert rows_of(remote) == rows_of(local) != []
