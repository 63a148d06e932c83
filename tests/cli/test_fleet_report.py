"""The database-run machinery without Spark: failure isolation, bounded parallelism, exit codes and the
HTML page's escaping."""

from __future__ import annotations

import threading
import time

from icecompat_writer.fleet import FleetReport, TableOutcome, TableRef, run_tables


def test_one_failing_table_is_its_own_outcome_and_parallelism_is_bounded() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def work(ref: TableRef) -> TableOutcome:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            time.sleep(0.05)
            if ref.name == "bad":
                raise RuntimeError("disk on fire")
            return TableOutcome(ref.name, ref.location, "compliant")
        finally:
            with lock:
                running -= 1

    refs = [TableRef(f"t{i}", f"/x/{i}") for i in range(5)]
    refs.insert(2, TableRef("bad", "/x/bad"))
    refs.append(TableRef("view", None, problem="a view, not a Delta table"))
    done: list[str] = []
    outcomes = run_tables(refs, work, parallel=2, on_done=lambda o: done.append(o.table))
    assert [o.table for o in outcomes] == [r.name for r in refs]  # the order given, whatever finished first
    assert sorted(done) == sorted(r.name for r in refs)
    assert peak == 2
    by_name = {o.table: o for o in outcomes}
    assert (by_name["bad"].verdict, by_name["bad"].error) == ("error", "RuntimeError: disk on fire")
    assert (by_name["view"].verdict, by_name["view"].error) == ("error", "a view, not a Delta table")
    assert [o.verdict for o in outcomes].count("compliant") == 5


def test_exit_codes_and_an_escaped_page() -> None:
    ok = TableOutcome("db.a", "/a", "compliant", delta_version=3, iceberg_version=1)
    assert ok.lag == 2
    assert FleetReport("check", "db", [ok]).exit_code() == 0
    bad = TableOutcome("db.b", "/b", "not compliant", rules=("ICV2-NO-DELETION-VECTORS",))
    assert FleetReport("check", "db", [ok, bad]).exit_code() == 1
    hostile = TableOutcome("db.<script>x</script>", "/c", "error", error="<img src=x onerror=alert(1)>")
    report = FleetReport("check", "db", [ok, bad, hostile])
    assert report.exit_code() == 2
    page = report.render_html()
    assert "<script>" not in page and "<img" not in page
    assert "db.&lt;script&gt;x&lt;/script&gt;" in page
    assert report.to_json()["counts"] == {"compliant": 1, "error": 1, "not compliant": 1}
    text = report.render_text()
    assert "db.a: COMPLIANT; Delta version 3; Iceberg lag 2" in text
    assert "db.b: NOT COMPLIANT; rules ICV2-NO-DELETION-VECTORS" in text
