"""The suite's files go to its workers longest first
(:mod:`plnlp_testing.longest_first`)."""
from pathlib import Path
from types import SimpleNamespace

from plnlp_testing.longest_first import SECONDS_FILE, file_seconds, longest_first, seconds_by_file

REPO_ROOT = Path(__file__).resolve().parents[1]


def items(*nodeids: str, alone: str = "") -> list[SimpleNamespace]:
    """Stand-ins for pytest's items; the one named ``alone`` is marked so."""
    return [SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name, nodeid=nodeid: (
        name if name == "alone" and nodeid == alone else None)) for nodeid in nodeids]


def test_longer_files_go_first_each_keeping_its_own_order_and_unnamed_ones_last():
    collected = items("tests/a.py::t1", "tests/a.py::t2", "tests/new.py::t", "tests/b.py::t1",
                      "tests/b.py::t2", "tests/c.py::t")
    seconds = {"tests/a.py": 5.0, "tests/b.py": 300.0, "tests/c.py": 40.0}
    assert [item.nodeid for item in longest_first(collected, seconds)] == [
        "tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t", "tests/a.py::t1", "tests/a.py::t2",
        "tests/new.py::t"]


def test_a_file_with_an_alone_test_goes_before_longer_files():
    collected = items("tests/a.py::t", "tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t",
                      alone="tests/b.py::t2")
    seconds = {"tests/a.py": 300.0, "tests/b.py": 20.0, "tests/c.py": 40.0}
    assert [item.nodeid for item in longest_first(collected, seconds)] == [
        "tests/b.py::t1", "tests/b.py::t2", "tests/a.py::t", "tests/c.py::t"]


def test_a_junit_report_gives_each_file_its_tests_seconds(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.core.test_x" name="test_a" time="1.5"/>'
        '<testcase classname="tests.core.test_x.TestGroup" name="test_b" time="2.0"/>'
        '<testcase classname="tests.pipelines.test_y" name="test_c[1]" time="10.25"/>'
        "</testsuite></testsuites>")
    assert seconds_by_file(report) == {"tests/pipelines/test_y.py": 10.2,
                                       "tests/core/test_x.py": 3.5}


def test_the_kept_seconds_name_test_files_of_this_suite():
    seconds = file_seconds()
    assert SECONDS_FILE.exists() and seconds
    assert all((REPO_ROOT / path).is_file() and Path(path).name.startswith("test_")
               for path in seconds), [path for path in seconds if not (REPO_ROOT / path).is_file()]
