"""check_table: exact verdicts on plain delta-spark tables, clean verdicts on compat tables, and damage.

Three kinds of tables are audited. Plain delta-spark tables (no compat feature) must get exactly the
violations their known shortcomings imply, per profile, column and data file. Tables written by
``compat_write`` must check clean in every profile, after schema evolution, OPTIMIZE and with every
checkpoint kind. Damaged and hostile tables must produce one clear finding per problem, naming the
file, and make the table non-compliant; a path that leaves the table root must never be opened
(watched with inotify, which sees opens by native code such as pyarrow too).
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icecompat_writer.checking.check import (
    CheckFinding,
    Report,
    Severity,
    check_table,
    declared_profile,
    violation_file,
)
from icecompat_writer.cli.main import main
from icecompat_writer.deltalog.actions import Metadata
from icecompat_writer.errors import IcecompatError, TableReadError, Violation
from icecompat_writer.evidence import footers
from icecompat_writer.planning import UnknownProfileError
from icecompat_writer.rules.catalog import CATALOG, RULES_BY_ID
from icecompat_writer.rules.kinds import KINDS
from icecompat_writer.rules.model import Finding
from icecompat_writer.storage import io_for
from tests import support
from tests.cli.synthetic import build_table, stats, write_data_file
from tests.deltalog import logbuilder as lb
from tests.support import session_conf

PROFILES = ["v3", "writer-v1", "writer-v3"]
Row = tuple[str, str, str | None]


def rows_of(report: Report, profile: str | None = None) -> list[Row]:
    """(rule, column path, data file) of every violation, sorted: what the assertions compare."""
    return sorted(
        (v.rule, v.path, violation_file(v))
        for v in report.violations
        if profile is None or v.profile == profile
    )


def codes_of(report: Report) -> list[tuple[str, str | None]]:
    return sorted((f.code, f.file) for f in report.findings)


# --- inotify: did anything (Python or native code) open a file? --------------------------------------

_IN_ACCESS = 0x001
_IN_OPEN = 0x020
_IN_NONBLOCK = 0o4000


class OpenWatch:
    """Records opens and reads of one file, whoever does them (Linux inotify through libc)."""

    def __init__(self, path: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _IN_OPEN | _IN_ACCESS)
        assert wd >= 0, os.strerror(ctypes.get_errno())

    def events(self) -> bytes:
        try:
            return os.read(self.fd, 65536)
        except BlockingIOError:
            return b""

    def close(self) -> None:
        os.close(self.fd)


# --- synthetic tables (no Spark) ---------------------------------------------------------------------

# What Delta writes into every AddFile of a table with row tracking (v3 tables have it on).
ROW_IDS = {"base_row_id": 0, "default_row_commit_version": 1}


@pytest.mark.parametrize("profile", PROFILES)
def test_a_compliant_synthetic_table_checks_clean_in_its_declared_profile(
    tmp_path: Path, profile: str
) -> None:
    table = build_table(tmp_path / "t", profile)
    report = check_table(table.root)
    assert report.profile == profile and report.declared == profile
    assert report.violations == () and report.findings == ()
    assert report.compliant
    assert (report.files_total, report.files_selected, report.files_checked) == (2, 2, 2)


def test_checking_a_v3_table_as_writer_v3_lists_what_writer_v3_adds(tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3")
    report = check_table(table.root, "writer-v3")
    assert report.profile == "writer-v3" and report.declared == "v3"
    assert rows_of(report) == [("IWC3-ENABLED", "", None), ("IWC3-FEATURE", "", None)]
    assert not report.compliant


def test_the_most_specific_declaring_property_wins() -> None:
    assert declared_profile({"delta.enableIcebergCompatV3": "true"}) == "v3"
    both = {"delta.enableIcebergCompatV3": "TRUE", "delta.enableIcebergWriterCompatV3": "true"}
    assert declared_profile(both) == "writer-v3"
    assert declared_profile({"delta.enableIcebergWriterCompatV1": "true"}) == "writer-v1"
    assert declared_profile({"delta.enableIcebergCompatV2": "true"}) is None
    assert declared_profile({"delta.enableIcebergCompatV3": "false"}) is None
    assert declared_profile({"delta.enableIcebergWriterCompatV1": " True "}) == "writer-v1"


def test_without_a_declared_profile_every_candidate_is_evaluated(tmp_path: Path) -> None:
    b = lb.LogBuilder(tmp_path / "t")
    b.commit(0, [lb.protocol(), lb.metadata(), lb.add("a.parquet")])
    report = check_table(tmp_path / "t", files="none")
    assert report.profile is None and report.declared is None and not report.compliant
    assert set(report.candidates) == set(PROFILES)
    for profile in PROFILES:
        alone = check_table(tmp_path / "t", profile, files="none")
        assert report.candidates[profile] == len(alone.violations) > 0
        assert [v for v in report.violations if v.profile == profile] == list(alone.violations)
    assert len(report.violations) == sum(report.candidates.values())
    page = report._repr_html_()
    assert "declares no profile" in page and "<td>writer-v1</td>" in page


def test_hostile_paths_are_reported_as_outside_and_never_opened(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "t" / "table"
    # The outside file is a valid, compliant-looking Parquet file: had it been read, it would count.
    probe = build_table(tmp_path / "probe", "v3", files=1)
    secret = outside / "secret.parquet"
    shutil.copy(probe.data_path(probe.files[0]), secret)
    hostile = [
        "../../etc/passwd",
        "../../outside/secret.parquet",
        "sub/../../../outside/secret.parquet",
        "%2E%2E/%2E%2E/outside/secret.parquet",
        str(secret),
        secret.as_uri(),
        "s3://bucket/table/part-0.parquet",
    ]
    extra = [lb.add(p, stats=stats(3), size=secret.stat().st_size, **ROW_IDS) for p in hostile]
    extra.append(lb.add("link.parquet", stats=stats(3), size=secret.stat().st_size, **ROW_IDS))
    table = build_table(root, "v3", files=1, extra_adds=extra)
    (root / "link.parquet").symlink_to(secret)

    watch = OpenWatch(secret)
    try:
        assert watch.events() == b""
        report = check_table(root)
        seen_during_check = watch.events()
        secret.read_bytes()  # the watch does see an open: a silent watch would prove nothing
        seen_after = watch.events()
    finally:
        watch.close()
    assert seen_during_check == b"", "check_table opened a file outside the table root"
    assert seen_after != b""

    assert codes_of(report) == sorted(("path_outside_table", p) for p in [*hostile, "link.parquet"])
    by_file = {f.file: f for f in report.findings}
    assert "resolves outside the table root" in by_file["../../etc/passwd"].message
    assert "not opened" in by_file["../../etc/passwd"].message
    assert "symbolic link" in by_file["link.parquet"].message
    assert all(f.severity is Severity.ERROR for f in report.findings)
    assert report.violations == ()
    assert (report.files_total, report.files_selected, report.files_checked) == (9, 9, 1)
    assert report.files_checked == len(table.files)
    assert not report.compliant


def test_a_deletion_vector_stored_outside_the_root_is_reported_on_its_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = build_table(root, "v3", files=1)
    size = write_data_file(root / "dv-host.parquet", table.metadata, 100, 3)
    outside_dv = (tmp_path / "elsewhere" / "dv.bin").as_uri()
    dv = {"storageType": "p", "pathOrInlineDv": outside_dv, "offset": 1, "sizeInBytes": 10, "cardinality": 1}
    lb.LogBuilder(root).commit(
        1, [lb.add("dv-host.parquet", stats=stats(3), size=size, deletion_vector=dv, **ROW_IDS)]
    )
    report = check_table(root)
    assert codes_of(report) == [("path_outside_table", "dv-host.parquet")]
    assert "deletion vector" in report.findings[0].message and outside_dv in report.findings[0].message
    assert not report.compliant


def test_missing_garbage_and_mismatched_data_files_are_per_file_findings(tmp_path: Path) -> None:
    root = tmp_path / "t"
    extra = [
        lb.add("gone.parquet", stats=stats(3), size=500, **ROW_IDS),
        lb.add("garbage.parquet", stats=stats(3), size=12, **ROW_IDS),
        lb.add("adir.parquet", stats=stats(3), size=0, **ROW_IDS),
        lb.add("wrong-rows.parquet", stats=stats(99), size=0, **ROW_IDS),
        lb.add("wrong-size.parquet", stats=stats(3), size=1, **ROW_IDS),
        lb.add("dangling.parquet", stats=stats(3), size=10, **ROW_IDS),
    ]
    table = build_table(root, "v3", files=1, extra_adds=extra)
    (root / "garbage.parquet").write_bytes(b"not parquet!")
    (root / "adir.parquet").mkdir()
    (root / "dangling.parquet").symlink_to(root / "nothing-here.parquet")
    write_data_file(root / "wrong-rows.parquet", table.metadata, 10, 3)
    write_data_file(root / "wrong-size.parquet", table.metadata, 20, 3)

    report = check_table(root)
    assert codes_of(report) == [
        ("missing_data_file", "dangling.parquet"),
        ("missing_data_file", "gone.parquet"),
        ("row_count_mismatch", "wrong-rows.parquet"),
        ("size_mismatch", "wrong-size.parquet"),
        ("unreadable_data_file", "adir.parquet"),
        ("unreadable_data_file", "garbage.parquet"),
    ]
    by_file = {f.file: f.message for f in report.findings}
    assert "does not exist" in by_file["gone.parquet"]
    assert "not Parquet" in by_file["garbage.parquet"]
    assert "directory" in by_file["adir.parquet"]
    assert "holds 3 rows" in by_file["wrong-rows.parquet"] and "says 99" in by_file["wrong-rows.parquet"]
    assert report.violations == () and not report.compliant
    assert report.files_checked == 3  # the good file, and the two readable but mismatched ones
    as_json = report.to_json()
    assert as_json["compliant"] is False and as_json["summary"]["errors"] == 6
    assert {f["file"] for f in as_json["findings"]} == {f.file for f in report.findings}

    # --files none opens no data file at all: the claims are checked, the files are not vouched for.
    unopened = check_table(root, files="none")
    assert unopened.findings == () and unopened.compliant and unopened.files_checked == 0


def test_a_table_reached_through_a_symlinked_root_is_not_outside_itself(tmp_path: Path) -> None:
    table = build_table(tmp_path / "real", "v3")
    (tmp_path / "alias").symlink_to(table.root, target_is_directory=True)
    report = check_table(tmp_path / "alias")
    assert report.findings == () and report.compliant and report.files_checked == 2


def test_file_level_violations_name_their_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = build_table(root, "writer-v1", files=1)
    size = write_data_file(root / "nostats.parquet", table.metadata, 50, 3)
    lb.LogBuilder(root).commit(1, [lb.add("nostats.parquet", num_records=None, size=size)])
    report = check_table(root)
    assert rows_of(report) == [("ICV2-NUM-RECORDS", "", "nostats.parquet")]
    entry = report.to_json()["violations"][0]
    assert (entry["rule"], entry["file"], entry["observed"]) == (
        "ICV2-NUM-RECORDS",
        "nostats.parquet",
        "no stats",
    )


def test_wrong_field_ids_and_row_tracking_ids_in_a_footer_are_violations(tmp_path: Path) -> None:
    """A file with the wrong id on column ``id`` (col-1) and on the materialized row id column; the
    table's own file is fine, so exactly these two nodes of ``bad.parquet`` are reported."""
    root = tmp_path / "t"
    build_table(root, "v3", files=1, properties={"delta.rowTracking.materializedRowIdColumnName": "_rid"})
    schema = pa.schema(
        [
            pa.field("col-1", pa.int64(), metadata={b"PARQUET:field_id": b"77"}),
            pa.field("_rid", pa.int64(), metadata={b"PARQUET:field_id": b"5"}),
        ]
    )
    pq.write_table(pa.table({"col-1": [1], "_rid": [0]}, schema=schema), root / "bad.parquet")
    size = (root / "bad.parquet").stat().st_size
    lb.LogBuilder(root).commit(1, [lb.add("bad.parquet", stats=stats(1), size=size, **ROW_IDS)])
    report = check_table(root)
    assert rows_of(report) == [
        ("ICV3-PARQUET-FIELD-IDS", "id", "bad.parquet"),
        ("ICV3-ROW-ID-FIELD-ID", "_rid", "bad.parquet"),
    ]
    assert report.findings == () and report.files_checked == 2


def test_a_truncated_commit_line_is_an_error_finding_with_its_place(tmp_path: Path) -> None:
    root = tmp_path / "t"
    build_table(root, "v3", files=1)
    line = json.dumps(lb.add("never.parquet")).encode()
    lb.LogBuilder(root).raw(
        "00000000000000000001.json", json.dumps(lb.commit_info()).encode() + b"\n" + line[:25]
    )
    report = check_table(root)
    assert [(f.code, f.file, f.line, f.severity) for f in report.findings] == [
        ("corrupt_line", "_delta_log/00000000000000000001.json", 2, Severity.ERROR)
    ]
    assert "truncated" in report.findings[0].message
    assert report.version == 1 and report.files_total == 1 and not report.compliant


def test_harmless_log_findings_are_warnings_that_keep_the_table_compliant(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = build_table(root, "v3", files=1)
    b = lb.LogBuilder(root)
    b.last_checkpoint({"version": 7, "size": 3})
    parts = b.multipart_checkpoint(0, [[{"protocol": table.protocol}], [{"metaData": table.metadata}]])
    parts[1].unlink()
    report = check_table(root)
    assert sorted((f.code, f.severity) for f in report.findings) == [
        ("incomplete_checkpoint", Severity.WARNING),
        ("stale_last_checkpoint", Severity.WARNING),
    ]
    assert report.errors == () and report.compliant
    assert report.to_json()["summary"] == {"violations": 0, "rules": {}, "errors": 0, "warnings": 2}


def test_files_option_selects_which_footers_are_read(tmp_path: Path) -> None:
    table = build_table(tmp_path / "t", "v3", files=5)
    calls: list[tuple[int, int]] = []
    report = check_table(
        table.root, files="sample:2", progress=lambda done, total: calls.append((done, total))
    )
    assert (report.files_total, report.files_selected, report.files_checked) == (5, 2, 2)
    assert calls == [(1, 2), (2, 2)]
    assert report.files_option == "sample:2" and report.to_json()["files"]["option"] == "sample:2"
    assert check_table(table.root, files="sample:9").files_checked == 5
    assert check_table(table.root, files="none").files_checked == 0
    assert check_table(table.root, files=" ALL ").files_checked == 5
    for bad in ("some", "sample:0", "sample:-1", "sample:x", ""):
        with pytest.raises(IcecompatError) as err:
            check_table(table.root, files=bad)
        assert type(err.value) is IcecompatError


def test_an_unknown_profile_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(UnknownProfileError):
        check_table(tmp_path / "does-not-exist", "v4")


def test_a_defect_in_the_footer_decoder_is_raised_not_reported_as_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what a bad file raises becomes a finding; a reader's own defect reaches the caller."""
    table = build_table(tmp_path / "t", "v3", files=1)

    def defect(*args: object) -> None:
        raise AttributeError("simulated defect in the decoder")

    monkeypatch.setattr(footers, "_footer", defect)
    with pytest.raises(AttributeError, match="simulated defect"):
        check_table(table.root)

    def too_deep(*args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(footers, "_footer", too_deep)  # what a hostile footer's nesting raises
    report = check_table(table.root)
    assert codes_of(report) == [("unreadable_data_file", live_paths(table.root)[0])]
    assert "nested too deeply" in report.findings[0].message


def test_unreadable_tables_raise_table_read_error(tmp_path: Path) -> None:
    with pytest.raises(TableReadError, match="not a Delta table"):
        check_table(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TableReadError, match="not a Delta table"):
        check_table(tmp_path / "empty")
    (tmp_path / "file-log" / "_delta_log").parent.mkdir()
    (tmp_path / "file-log" / "_delta_log").write_text("x")
    with pytest.raises(TableReadError, match="not a directory"):
        check_table(tmp_path / "file-log")
    lb.LogBuilder(tmp_path / "garbage").raw("00000000000000000000.json", b"{garbage\n")
    with pytest.raises(TableReadError, match="no protocol and metaData"):
        check_table(tmp_path / "garbage")
    build_table(tmp_path / "ok", "v3", files=1)
    with pytest.raises(TableReadError, match="does not exist"):
        check_table(tmp_path / "ok", version=3)


def test_reports_render_as_text_json_and_html(tmp_path: Path) -> None:
    root = tmp_path / "t<&>"
    table = build_table(root, "writer-v1", files=1)
    size = write_data_file(root / "x <b>.parquet", table.metadata, 50, 3)
    lb.LogBuilder(root).commit(1, [lb.add("x%20%3Cb%3E.parquet", num_records=None, size=size)])
    report = check_table(root)
    assert [v.rule for v in report.violations] == ["ICV2-NUM-RECORDS"]
    text = report.render_text()
    assert "NOT COMPLIANT" in text and "ICV2-NUM-RECORDS" in text and "x%20%3Cb%3E.parquet" in text
    page = report._repr_html_()
    assert "t&lt;&amp;&gt;" in page and "t<&>" not in page
    assert "<td><code>x%20%3Cb%3E.parquet</code></td>" in page
    data = json.loads(json.dumps(report.to_json()))
    assert data["format"] == "icecompat-check/1"
    assert set(data) == {
        "format", "table", "version", "checkpoint_version", "profile", "declared_profile", "compliant",
        "files", "candidates", "summary", "violations", "findings",
    }  # fmt: skip
    assert data["violations"][0]["file"] == "x%20%3Cb%3E.parquet"
    assert data["summary"]["rules"] == {"ICV2-NUM-RECORDS": 1}


FILE_RULES = [r for r in CATALOG if "{file}" in r.message]


def test_every_file_level_rule_names_its_file_in_the_message() -> None:
    file_kinds = {name for name, k in KINDS.items() if "file" in k.fields}
    assert {r.id for r in FILE_RULES} == {r.id for r in CATALOG if r.kind in file_kinds}
    assert len(FILE_RULES) >= 9


@pytest.mark.parametrize("rule", FILE_RULES, ids=lambda r: r.id)
def test_violation_file_reads_the_file_back_out_of_each_rule_message(rule: Any) -> None:
    # The file comes from the finding's values, which a violation keeps; the message is never parsed.
    tricky = "p=a b/{x} file has no numRecords statistic in file .parquet"
    values = {name: f"<{name}>" for name in KINDS[rule.kind].fields} | {"file": tricky}
    message, fix = rule.render(Finding(path="c", observed="o", expected="e", values=values))
    v = Violation(rule.profiles[0], rule.id, "c", message, fix, "o", "e", values=values)
    assert violation_file(v) == tricky


def test_violation_file_is_none_for_rules_without_a_file() -> None:
    rule = RULES_BY_ID["ICV3-ENABLED"]
    v = Violation("v3", rule.id, "", "anything", "fix")
    assert violation_file(v) is None
    assert violation_file(Violation("v3", "NOT-A-RULE", "", "file x has no y", "fix")) is None


def test_the_checkers_claims_are_exactly_what_file_facts_builds() -> None:
    from icecompat_writer.deltalog.files import AddFile
    from icecompat_writer.evidence.footers import file_facts
    from icecompat_writer.evidence.live_files import _claims

    full = AddFile.from_json(
        lb.add(
            "p=1/f.parquet",
            partition_values={"p": "1"},
            deletion_vector=lb.dv(),
            base_row_id=7,
            default_row_commit_version=3,
        )["add"]
    )
    bare = AddFile.from_json({"path": "g.parquet"})
    for add in (full, bare):
        assert _claims(add) == file_facts("/nowhere", add, read_footer=False, io=io_for("/nowhere"))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("partitioned", [False, True])
def test_file_rules_say_nothing_about_a_file_with_numrecords_no_dv_and_no_footer(
    profile: str, partitioned: bool
) -> None:
    """What lets check_table build facts only for some files: for any other file (numRecords
    present, no deletion vector, row ids present, footer not read) every file rule of the catalog is
    silent, whatever its other claims say. A new file rule that reads other claims must change
    _claimed_facts."""
    from icecompat_writer.facts import DataFileFacts
    from icecompat_writer.planning import plan, validate
    from icecompat_writer.rules.model import Scope
    from tests.cli.synthetic import LOGICAL_SCHEMA

    logical = Metadata(
        schema_string=json.dumps(LOGICAL_SCHEMA),
        partition_columns=("name",) if partitioned else (),
        configuration={} if profile == "writer-v1" else {"delta.enableRowTracking": "true"},
    )
    planned = plan(profile, logical)
    odd = [
        DataFileFacts(
            "a.parquet", num_records=0, has_stats=True, base_row_id=0, default_row_commit_version=0
        ),
        DataFileFacts("../b.parquet", {"zzz": None}, 5, False, 0, 0, False, None, "unreadable"),
        DataFileFacts("c.parquet", {"name": "x"}, -1, True, -5, 2**70, False),
    ]
    for p in PROFILES:
        assert validate(p, planned.metadata, planned.protocol, files=odd, scopes={Scope.FILE}) == []
    flagged = [
        DataFileFacts(
            "d.parquet", num_records=None, has_stats=True, base_row_id=0, default_row_commit_version=0
        ),
        DataFileFacts(
            "e.parquet", num_records=3, has_deletion_vector=True, base_row_id=9, default_row_commit_version=1
        ),
        DataFileFacts("f.parquet", num_records=3, has_stats=True),  # no row ids: flagged with row tracking on
    ]
    found = [
        v
        for p in PROFILES
        for v in validate(p, planned.metadata, planned.protocol, files=flagged, scopes={Scope.FILE})
    ]
    expected = {"d.parquet", "e.parquet"} | ({"f.parquet"} if profile != "writer-v1" else set())
    assert {violation_file(v) for v in found} == expected


@pytest.mark.parametrize("files", ["none", "sample:2", "all"])
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_check_table_finds_what_validating_every_files_claims_finds(
    tmp_path: Path, files: str, profile: str
) -> None:
    from icecompat_writer.deltalog import read_snapshot
    from icecompat_writer.evidence.live_files import _claims
    from icecompat_writer.planning import validate

    extra = [
        lb.add("nostats.parquet", num_records=None),
        lb.add("dv.parquet", deletion_vector=lb.dv()),
        lb.add("../outside.parquet"),
        lb.add("fine.parquet"),
    ]
    build_table(tmp_path, "v3", files=4, extra_adds=extra)
    report = check_table(tmp_path, profile, files=files)
    snap = read_snapshot(tmp_path, io=io_for(tmp_path))
    everything = validate(profile, snap.metadata, snap.protocol, files=[_claims(a) for a in snap.add_files])
    if files == "none":  # no footer read: the claims are all the file rules see
        assert list(report.violations) == everything
    claims = {"num_records_present", "no_deletion_vector_files"}
    got = [v for v in report.violations if RULES_BY_ID[v.rule].kind in claims]
    assert got == [v for v in everything if RULES_BY_ID[v.rule].kind in claims]
    assert {violation_file(v) for v in got} == (
        {"nostats.parquet", "dv.parquet"} if profile == "writer-v1" else {"nostats.parquet"}
    )
    assert report.files_total == len(snap.add_files) == 8
    assert ("path_outside_table", "../outside.parquet") in codes_of(report)


def test_a_check_finding_from_the_log_keeps_place_and_severity() -> None:
    from icecompat_writer.deltalog.findings import FindingCode, LogFinding

    f = CheckFinding.from_log(LogFinding(FindingCode.MISSING_COMMIT, "gap", "_delta_log/x.json", None))
    assert (f.code, f.severity, f.file, f.line, f.blocking) == (
        "missing_commit",
        Severity.ERROR,
        "_delta_log/x.json",
        None,
        True,
    )
    w = CheckFinding.from_log(LogFinding(FindingCode.STALE_LAST_CHECKPOINT, "hint", None, None))
    assert w.severity is Severity.WARNING and not w.blocking
    assert w.render() == "warning stale_last_checkpoint: hint"


# --- plain delta-spark tables --------------------------------------------------------------------------


def sql(spark: Any, text: str) -> None:
    spark.sql(text).collect()


PLAIN = ("default", "name_nested", "int96", "partitioned_unmaterialized", "partitioned_default", "no_stats")
TS = "timestamp'2024-01-01 00:00:00'"


@pytest.fixture(scope="module")
def plain(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tables written by plain delta-spark (no compat feature), two files each."""
    base = tmp_path_factory.mktemp("plain")
    t = {name: base / name for name in PLAIN}
    name_mode = "TBLPROPERTIES ('delta.columnMapping.mode'='name')"
    sql(
        spark,
        f"CREATE TABLE delta.`{t['default']}` USING delta AS SELECT id, cast(id AS STRING) AS s "
        "FROM range(0, 4, 1, 2)",
    )
    sql(
        spark,
        f"CREATE TABLE delta.`{t['name_nested']}` USING delta {name_mode} AS SELECT id, "
        "named_struct('x', cast(id AS INT)) AS st, array(id) AS a, map('k', id) AS m FROM range(0, 4, 1, 2)",
    )
    before = {k: spark.conf.get(k, None) for k in ("spark.sql.parquet.outputTimestampType",)}
    with session_conf(spark, {"spark.sql.parquet.outputTimestampType": "INT96"}):
        sql(
            spark,
            f"CREATE TABLE delta.`{t['int96']}` USING delta {name_mode} AS SELECT id, {TS} AS ts, "
            f"named_struct('t', {TS}) AS s, array({TS}) AS a FROM range(0, 4, 1, 2)",
        )
    assert {k: spark.conf.get(k, None) for k in before} == before
    # delta-spark 4.4 writes partition values into the files unless the table says otherwise
    sql(
        spark,
        f"CREATE TABLE delta.`{t['partitioned_unmaterialized']}` USING delta PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.columnMapping.mode'='name', 'delta.writePartitionColumnsToParquet'='false') "
        "AS SELECT id, cast(id % 2 AS STRING) AS p FROM range(0, 4, 1, 1)",
    )
    sql(
        spark,
        f"CREATE TABLE delta.`{t['partitioned_default']}` USING delta PARTITIONED BY (p) "
        "AS SELECT id, cast(id % 2 AS STRING) AS p FROM range(0, 4, 1, 1)",
    )
    ids = "SELECT id FROM range(0, 4, 1, 2)"
    before = {k: spark.conf.get(k, None) for k in ("spark.databricks.delta.stats.collect",)}
    with session_conf(spark, {"spark.databricks.delta.stats.collect": "false"}):
        sql(spark, f"CREATE TABLE delta.`{t['no_stats']}` USING delta {name_mode} AS {ids}")
    assert {k: spark.conf.get(k, None) for k in before} == before
    return t


def no_mapping_base(profile: str, fields: list[str]) -> list[Row]:
    """What every plain table without column mapping (protocol 1/2) violates."""
    out: list[Row] = [("CM-IDS-ASSIGNED", f, None) for f in fields]
    out += [("CM-WRITER-FEATURE", "", None), ("PROTO-READER-COLUMN-MAPPING", "", None)]
    out += [("PROTO-WRITER-VERSION", "", None)]
    if profile == "v3":
        out += [("ICV3-COLUMN-MAPPING-MODE", "", None)]
    else:
        out += [("IWC1-ID-MODE", "", None)]
    return sorted(out + _compat_properties(profile))


def _compat_properties(profile: str) -> list[Row]:
    """The properties and features a plain table lacks for each profile (table-level, no column)."""
    v3: list[Row] = [("ICV3-ENABLED", "", None), ("ICV3-FEATURE", "", None), ("ICV3-ROW-TRACKING", "", None)]
    v3 += [("ICV3-ROW-TRACKING-FEATURES", "", None)] * 2  # rowTracking and domainMetadata
    if profile == "v3":
        return v3
    if profile == "writer-v1":
        return [(rule, "", None) for rule in ("ICV2-ENABLED", "ICV2-FEATURE", "IWC1-ENABLED", "IWC1-FEATURE")]
    return [*v3, ("IWC3-ENABLED", "", None), ("IWC3-FEATURE", "", None)]


def name_mode_base(profile: str, fields: list[str], slots: list[str]) -> list[Row]:
    """What every plain table in name mode violates: compat properties/features, col-<uuid> names
    (writer profiles) and nested ids (delta-spark assigns none in name mode)."""
    out = _compat_properties(profile)
    nested = "ICV2-NESTED-IDS" if profile == "writer-v1" else "ICV3-NESTED-IDS"
    out += [(nested, s, None) for s in slots]
    if profile != "v3":
        out += [("IWC1-ID-MODE", "", None)] + [("IWC1-PHYSICAL-NAME", f, None) for f in fields]
    return sorted(out)


def per_file(rule: str, profile: str, paths: list[str], files: list[str]) -> list[Row]:
    prefix = "ICV2" if profile == "writer-v1" else "ICV3"
    return [(f"{prefix}-{rule}", p, f) for p in paths for f in files]


def live_paths(root: Path) -> list[str]:
    return sorted(a["path"] for a in support.live_adds(root))


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_plain_default_table_lacks_column_mapping_entirely(plain: dict[str, Path], profile: str) -> None:
    report = check_table(plain["default"], profile)
    assert rows_of(report) == no_mapping_base(profile, ["id", "s"])
    assert report.findings == () and report.files_checked == report.files_total == 2


@pytest.mark.spark
def test_plain_default_table_gets_candidates_instead_of_a_verdict(plain: dict[str, Path]) -> None:
    report = check_table(plain["default"])
    assert report.profile is None and not report.compliant
    assert report.candidates == {p: len(no_mapping_base(p, ["id", "s"])) for p in PROFILES}
    for profile in PROFILES:
        assert rows_of(report, profile) == no_mapping_base(profile, ["id", "s"])


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_plain_name_mode_table_has_uuid_physical_names_and_no_nested_ids(
    plain: dict[str, Path], profile: str
) -> None:
    root = plain["name_nested"]
    report = check_table(root, profile)
    fields = ["a", "id", "m", "st", "st.x"]
    assert rows_of(report) == name_mode_base(profile, fields, ["a.element", "m.key", "m.value"])
    if profile != "v3":
        # observed is the col-<uuid> name delta-spark chose, read independently from the log
        schema = json.loads(support.latest(root, "metaData")["schemaString"])
        top = {f["name"]: f["metadata"] for f in schema["fields"]}
        names = {
            v.path: (v.observed, v.expected) for v in report.violations if v.rule == "IWC1-PHYSICAL-NAME"
        }
        for name in ("id", "a", "m", "st"):
            md = top[name]
            assert names[name] == (
                md["delta.columnMapping.physicalName"],
                f"col-{md['delta.columnMapping.id']}",
            )
            assert len(md["delta.columnMapping.physicalName"]) == len("col-") + 36


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_plain_int96_timestamps_are_flagged_in_every_file_and_nesting(
    plain: dict[str, Path], profile: str
) -> None:
    root = plain["int96"]
    files = live_paths(root)
    assert len(files) == 2
    for f in files:  # independent observation: delta-spark did write INT96 here
        assert set(support.physical_types(root / f).values()) >= {"INT96"}
    report = check_table(root, profile)
    expected = name_mode_base(profile, ["a", "id", "s", "s.t", "ts"], ["a.element"])
    expected += per_file("TIMESTAMP-INT64", profile, ["a.element", "s.t", "ts"], files)
    assert rows_of(report) == sorted(expected)
    assert {v.observed for v in report.violations if v.rule.endswith("TIMESTAMP-INT64")} == {"INT96"}


@pytest.mark.spark
@pytest.mark.parametrize("profile", ["v3", "writer-v1"])
def test_plain_partition_values_missing_from_files_are_flagged(plain: dict[str, Path], profile: str) -> None:
    root = plain["partitioned_unmaterialized"]
    files = live_paths(root)
    assert len(files) == 2
    for f in files:
        assert list(pq.ParquetFile(root / f).schema_arrow.names) == [
            json.loads(support.latest(root, "metaData")["schemaString"])["fields"][0]["metadata"][
                "delta.columnMapping.physicalName"
            ]
        ]
    report = check_table(root, profile)
    expected = name_mode_base(profile, ["id", "p"], []) + per_file(
        "PARTITION-MATERIALIZED", profile, ["p"], files
    )
    assert rows_of(report) == sorted(expected)


@pytest.mark.spark
def test_plain_partitioned_table_with_materialized_values_is_not_flagged(plain: dict[str, Path]) -> None:
    root = plain["partitioned_default"]
    files = live_paths(root)
    assert len(files) == 2
    for f in files:  # delta-spark 4.4 writes the partition column into the file by default
        assert pq.ParquetFile(root / f).schema_arrow.names == ["id", "p"]
    report = check_table(root, "v3")
    assert rows_of(report) == no_mapping_base("v3", ["id", "p"])


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_plain_table_without_stats_misses_num_records_in_every_file(
    plain: dict[str, Path], profile: str
) -> None:
    root = plain["no_stats"]
    files = live_paths(root)
    assert len(files) == 2 and all("stats" not in a or a["stats"] is None for a in support.live_adds(root))
    report = check_table(root, profile)
    expected = name_mode_base(profile, ["id"], []) + per_file("NUM-RECORDS", profile, [""], files)
    assert rows_of(report) == sorted(expected)


# --- tables written by compat_write ---------------------------------------------------------------------

FIRST = (
    "SELECT id, concat('n', id) AS name, IF(id % 2 = 0, 'even', 'odd') AS part, "
    f"{TS} + make_interval(0, 0, 0, 0, 0, 0, id) AS ts, named_struct('a', cast(id AS INT)) AS s, "
    "array(named_struct('x', cast(id AS INT))) AS arr, map('k', array(cast(id AS INT))) AS m "
    "FROM range({start}, {end}, 1, 2)"
)
# mergeSchema: a new nested field in s and a new top-level struct
SECOND = (
    "SELECT id, concat('n', id) AS name, IF(id % 2 = 0, 'even', 'odd') AS part, "
    f"{TS} AS ts, named_struct('a', cast(id AS INT), 'b', 'new') AS s, "
    "array(named_struct('x', cast(id AS INT))) AS arr, map('k', array(cast(id AS INT))) AS m, "
    "named_struct('y', id) AS extra FROM range({start}, {end}, 1, 2)"
)


@pytest.fixture(scope="module")
def compat_tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from icecompat_writer.writing.api import compat_write

    base = tmp_path_factory.mktemp("compat")
    out = {}
    for profile in PROFILES:
        root = base / profile
        compat_write(
            spark.sql(FIRST.format(start=0, end=4)),
            str(root),
            mode="append",
            partition_by=["part"],
            profile=profile,
        )
        compat_write(
            spark.sql(SECOND.format(start=4, end=8)),
            str(root),
            mode="append",
            profile=profile,
            options={"mergeSchema": "true"},
        )
        out[profile] = root
    return out


@pytest.mark.spark
@pytest.mark.parametrize("profile", PROFILES)
def test_compat_tables_check_clean_before_and_after_schema_evolution(
    compat_tables: dict[str, Path], profile: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = compat_tables[profile]
    schema = json.loads(support.latest(root, "metaData")["schemaString"])
    assert "extra" in [f["name"] for f in schema["fields"]]  # the evolution did happen
    for version in (0, 1):
        report = check_table(root, version=version)
        assert report.profile == report.declared == profile
        assert report.violations == () and report.findings == ()
        assert report.files_checked == report.files_total > 0
    assert check_table(root).files_total == len(support.live_adds(root))
    assert main(["check", str(root)]) == 0
    assert "COMPLIANT" in capsys.readouterr().out
    assert main(["check", str(root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compliant"] is True and data["violations"] == [] and data["findings"] == []


@pytest.mark.spark
def test_a_v3_table_after_optimize_checks_clean_with_row_tracking_ids(spark: Any, tmp_path: Path) -> None:
    from icecompat_writer.writing.api import compat_write

    root = tmp_path / "opt"
    for start in (0, 10, 20):
        compat_write(spark.range(start, start + 5, 1, 1), str(root), mode="append", profile="v3")
    sql(spark, f"OPTIMIZE delta.`{root}`")
    conf = support.latest(root, "metaData")["configuration"]
    row_id = conf["delta.rowTracking.materializedRowIdColumnName"]
    row_version = conf["delta.rowTracking.materializedRowCommitVersionColumnName"]
    materialized = 0
    for add in support.live_adds(root):
        ids = support.parquet_field_ids(support.data_file(root, add))
        if row_id in ids:
            materialized += 1
            assert (ids[row_id], ids[row_version]) == (2147483540, 2147483539)
    assert materialized >= 1, "OPTIMIZE materializes the row-tracking columns"
    report = check_table(root)
    assert report.profile == "v3" and report.violations == () and report.findings == ()
    assert report.files_checked == report.files_total == len(support.live_adds(root))


CHECKPOINTS = {
    "classic": ({}, {}),
    "multi-part": ({}, {"spark.databricks.delta.checkpoint.partSize": "1"}),
    "v2": ({"delta.checkpointPolicy": "v2"}, {}),
}


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(CHECKPOINTS))
def test_every_checkpoint_kind_delta_spark_writes_is_read(spark: Any, tmp_path: Path, kind: str) -> None:
    from icecompat_writer.writing.api import compat_write

    properties, confs = CHECKPOINTS[kind]
    root = tmp_path / kind
    before = {k: spark.conf.get(k, None) for k in confs}
    with session_conf(spark, confs):
        props = {"delta.checkpointInterval": "1", **properties}
        compat_write(spark.range(0, 4, 1, 2), str(root), mode="append", profile="v3", properties=props)
        compat_write(spark.range(4, 8, 1, 2), str(root), mode="append", profile="v3")
    assert {k: spark.conf.get(k, None) for k in confs} == before
    names = sorted(p.name for p in (root / "_delta_log").iterdir())
    checkpoints = [n for n in names if n.startswith("00000000000000000001.checkpoint.")]
    if kind == "classic":
        assert checkpoints == ["00000000000000000001.checkpoint.parquet"]
    elif kind == "multi-part":
        assert len(checkpoints) >= 2 and all(
            n.endswith(f".{len(checkpoints):010d}.parquet") for n in checkpoints
        )
    else:
        assert len(checkpoints) == 1 and len(checkpoints[0].split(".")) == 4  # <v>.checkpoint.<uuid>.json

    report = check_table(root)
    assert report.checkpoint_version == 1  # replay started from the checkpoint, not from version 0
    assert report.profile == "v3" and report.violations == () and report.findings == ()
    assert report.files_total == len(spark.read.format("delta").load(str(root)).inputFiles()) == 4


@pytest.fixture(scope="module")
def damage_source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from icecompat_writer.writing.api import compat_write

    root = tmp_path_factory.mktemp("damage") / "source"
    compat_write(spark.range(0, 4, 1, 2), str(root), mode="append", profile="v3")
    compat_write(spark.range(4, 8, 1, 2), str(root), mode="append", profile="v3")
    assert check_table(root).compliant
    return root


@pytest.fixture
def damaged(damage_source: Path, tmp_path: Path) -> Path:
    """A private copy of a clean compat table, to be damaged by one test."""
    return Path(shutil.copytree(damage_source, tmp_path / "copy"))


@pytest.mark.spark
def test_a_truncated_line_in_a_real_commit_is_a_finding_not_a_crash(
    damaged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit = damaged / "_delta_log" / "00000000000000000001.json"
    lines = commit.read_bytes().splitlines(keepends=True)
    commit.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    report = check_table(damaged)
    assert [(f.code, f.file, f.line) for f in report.findings] == [
        ("corrupt_line", "_delta_log/00000000000000000001.json", len(lines))
    ]
    assert report.violations == () and not report.compliant
    assert main(["check", str(damaged), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["file"], f["line"], f["severity"]) for f in data["findings"]] == [
        ("corrupt_line", "_delta_log/00000000000000000001.json", len(lines), "error")
    ]


@pytest.mark.spark
def test_a_deleted_data_file_is_a_finding_naming_it(
    damaged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = live_paths(damaged)[0]
    (damaged / victim).unlink()
    report = check_table(damaged)
    assert codes_of(report) == [("missing_data_file", victim)]
    assert report.violations == () and not report.compliant
    assert report.files_checked == report.files_total - 1
    assert main(["check", str(damaged), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["file"]) for f in data["findings"]] == [("missing_data_file", victim)]


@pytest.mark.spark
def test_a_data_file_replaced_by_garbage_is_a_finding_naming_it(damaged: Path) -> None:
    victim = live_paths(damaged)[-1]
    (damaged / victim).write_bytes(b"\x00garbage" * 64)
    report = check_table(damaged)
    assert codes_of(report) == [("unreadable_data_file", victim)]
    assert "not Parquet" in report.findings[0].message
    assert report.violations == () and not report.compliant
