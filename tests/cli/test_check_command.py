"""``icecompat check``: exit codes, what goes to stdout and stderr, --json purity, a real subprocess.

In-process runs call ``main([...])`` and capture stdout/stderr with capsys; one class of tests runs the
installed console script (``.venv/bin/icecompat``) the way a user or a CI job would, and parses its
stdout as JSON. Tables are synthetic (tests/cli/synthetic.py): no Spark is needed to check a table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from icecompat_writer.cli import main as cli
from icecompat_writer.cli.main import EXIT_ERROR, EXIT_OK, EXIT_VIOLATIONS, main
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb

ICECOMPAT = Path(sys.executable).parent / "icecompat"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps tables to the terminal width; a wide one keeps every cell on one line."""
    monkeypatch.setenv("COLUMNS", "240")


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return build_table(tmp_path / "clean", "v3").root


@pytest.fixture
def no_stats(tmp_path: Path) -> Path:
    """A writer-v1 table whose second file has no stats: one file-level violation."""
    root = tmp_path / "no_stats"
    table = build_table(root, "writer-v1", files=1)
    size = write_data_file(root / "nostats.parquet", table.metadata, 50, 3)
    lb.LogBuilder(root).commit(1, [lb.add("nostats.parquet", num_records=None, size=size)])
    return root


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A v3 table with a missing data file and a truncated commit line."""
    root = tmp_path / "broken"
    gone = lb.add("gone.parquet", stats=stats(3), size=10)
    gone["add"].update(baseRowId=1000, defaultRowCommitVersion=0)  # a v3 AddFile carries its row ids
    build_table(root, "v3", files=1, extra_adds=[gone])
    lb.LogBuilder(root).raw("00000000000000000001.json", b'{"commitInfo":{}}\n{"add":{"path":"x')
    return root


def test_a_compliant_table_exits_0_with_a_verdict_on_stdout(
    clean: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "check", str(clean))
    assert code == EXIT_OK == 0
    assert "profile v3: COMPLIANT" in " ".join(out.split())
    assert "NOT COMPLIANT" not in out and err == ""


def test_json_output_is_only_json(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(clean), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)  # the whole of stdout parses: nothing else was printed
    assert data["compliant"] is True and data["profile"] == "v3" and data["violations"] == []
    assert data["files"] == {
        "option": "all",
        "total": 2,
        "footers_selected": 2,
        "footers_read": 2,
        "deletion_vectors_read": 0,
    }


def test_violations_exit_1_and_the_table_names_rule_column_and_file(
    no_stats: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", str(no_stats))
    assert code == EXIT_VIOLATIONS == 1
    flat = " ".join(out.split())
    assert "NOT COMPLIANT" in flat and "ICV2-NUM-RECORDS" in flat and "nostats.parquet" in out
    assert "Fix:" in flat

    code, out, _ = run(capsys, "check", str(no_stats), "--json", "--profile", "writer-v1")
    assert code == 1
    data = json.loads(out)
    assert [(v["rule"], v["path"], v["file"]) for v in data["violations"]] == [
        ("ICV2-NUM-RECORDS", "", "nostats.parquet")
    ]
    assert data["summary"]["rules"] == {"ICV2-NUM-RECORDS": 1}


def test_an_explicit_profile_overrides_the_declared_one(
    clean: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", str(clean), "--profile", "writer-v3", "--json")
    data = json.loads(out)
    assert code == 1 and data["profile"] == "writer-v3" and data["declared_profile"] == "v3"
    assert sorted(v["rule"] for v in data["violations"]) == ["IWC3-ENABLED", "IWC3-FEATURE"]


def test_a_table_declaring_no_profile_gets_candidate_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = lb.LogBuilder(tmp_path / "plain")
    b.commit(0, [lb.protocol(), lb.metadata(), lb.add("a.parquet")])
    code, out, _ = run(capsys, "check", str(tmp_path / "plain"), "--files", "none")
    assert code == 1
    assert "declares no profile" in out and "candidate profiles" in out and "closest profile" in out
    code, out, _ = run(capsys, "check", str(tmp_path / "plain"), "--files", "none", "--json")
    data = json.loads(out)
    assert data["profile"] is None and data["compliant"] is False
    assert set(data["candidates"]) == {"v3", "writer-v1", "writer-v3"}
    assert sum(data["candidates"].values()) == len(data["violations"])


def test_damage_is_reported_per_file_and_exits_1(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(broken))
    assert code == 1
    assert "missing_data_file" in out and "gone.parquet" in out and "corrupt_line" in out
    code, out, _ = run(capsys, "check", str(broken), "--json")
    data = json.loads(out)
    assert code == 1 and data["violations"] == []
    assert sorted((f["code"], f["file"], f["line"]) for f in data["findings"]) == [
        ("corrupt_line", "_delta_log/00000000000000000001.json", 2),
        ("missing_data_file", "gone.parquet", None),
    ]


@pytest.mark.parametrize("kind", ["missing", "not_delta", "log_is_a_file", "no_protocol"])
def test_read_errors_exit_2_with_the_reason_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    path = tmp_path / kind
    if kind == "not_delta":
        path.mkdir()
        (path / "data.parquet").write_bytes(b"x")
    elif kind == "log_is_a_file":
        path.mkdir()
        (path / "_delta_log").write_text("not a directory")
    elif kind == "no_protocol":
        lb.LogBuilder(path).raw("00000000000000000000.json", b"{not json\n")
    code, out, err = run(capsys, "check", str(path))
    assert code == EXIT_ERROR == 2
    assert out == "" and err.startswith("icecompat check: ")
    code, out, err = run(capsys, "check", str(path), "--json")
    assert code == 2 and err.startswith("icecompat check: ")
    error = json.loads(out)["error"]
    assert error["type"] == "TableReadError" and error["table"] == str(path) and error["message"] in err


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "t", "--profile", "v4"],
        ["check", "t", "--files", "some"],
        ["check", "t", "--files", "sample:0"],
        ["check", "t", "--bogus"],
    ],
)
def test_usage_errors_exit_2_before_reading_anything(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and "usage: icecompat" in err


def test_a_crash_inside_the_checker_exits_2_not_1(
    clean: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import icecompat_writer.checking.check as check_module

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(check_module, "check_table", boom)
    code, out, err = run(capsys, "check", str(clean), "--json")
    assert code == 2 and "internal error" in err and "simulated bug" in err
    assert json.loads(out)["error"]["type"] == "RuntimeError"


def test_the_progress_bar_goes_to_stderr_and_never_into_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = build_table(tmp_path / "t", "v3", files=3).root
    monkeypatch.setattr(cli, "PROGRESS_MIN_FILES", 2)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws the bar only on a terminal
    code, out, err = run(capsys, "check", str(root), "--json")
    assert code == 0 and json.loads(out)["compliant"] is True
    assert "reading Parquet footers" in err

    monkeypatch.setattr(cli, "PROGRESS_MIN_FILES", 4)  # a table below the threshold shows no bar
    code, out, err = run(capsys, "check", str(root), "--json")
    assert code == 0 and err == ""


def test_long_rule_groups_are_cut_in_the_terminal_but_complete_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "many"
    table = build_table(root, "v3", files=1)
    adds = []
    for i in range(12):
        size = write_data_file(root / f"n{i}.parquet", table.metadata, 100 + i, 1)
        add = lb.add(f"n{i}.parquet", num_records=None, size=size)
        add["add"].update(baseRowId=1000 + i, defaultRowCommitVersion=1)  # only numRecords is missing
        adds.append(add)
    lb.LogBuilder(root).commit(1, adds)
    code, out, _ = run(capsys, "check", str(root))
    assert code == 1 and "ICV3-NUM-RECORDS (12)" in out and "and 2 more" in " ".join(out.split())
    code, out, _ = run(capsys, "check", str(root), "--json")
    assert sorted(v["file"] for v in json.loads(out)["violations"]) == sorted(
        f"n{i}.parquet" for i in range(12)
    )


def test_the_other_subcommands_still_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "conf")
    assert code == 0 and "spark.sql.extensions" in out
    code, out, err = run(capsys, "iceberg", str(tmp_path / "missing"))
    assert code == 2 and "not a Delta table" in err
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "check" in out and "iceberg" in out


class TestConsoleScript:
    """The installed ``icecompat`` script, run as a separate process."""

    def script(self, *argv: str) -> subprocess.CompletedProcess[str]:
        assert ICECOMPAT.is_file(), f"console script not installed at {ICECOMPAT}"
        return subprocess.run(
            [str(ICECOMPAT), *argv], capture_output=True, text=True, timeout=120, check=False
        )

    def test_compliant_table_json(self, clean: Path) -> None:
        done = self.script("check", str(clean), "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["compliant"] is True and data["table"] == str(clean) and data["findings"] == []

    def test_violations_and_damage_json(self, no_stats: Path, broken: Path) -> None:
        done = self.script("check", str(no_stats), "--json")
        assert done.returncode == 1
        assert [v["file"] for v in json.loads(done.stdout)["violations"]] == ["nostats.parquet"]
        done = self.script("check", str(broken), "--json", "--files", "all")
        assert done.returncode == 1
        assert {f["code"] for f in json.loads(done.stdout)["findings"]} == {
            "corrupt_line",
            "missing_data_file",
        }

    def test_missing_table_json(self, tmp_path: Path) -> None:
        done = self.script("check", str(tmp_path / "nope"), "--json")
        assert done.returncode == 2
        assert json.loads(done.stdout)["error"]["type"] == "TableReadError"
        assert "not a Delta table" in done.stderr
