"""A pytest plugin for the suite run in workers (pytest-xdist's ``-n 2
--dist=loadfile``): the test files that took longest start first, so that
no long file is left for the end while the other worker has nothing to do.

pytest-xdist hands each worker a whole file when it is free, by default
those with the most tests first: the file of two tests that took 255 s
went out last. Here the files go out in the order of the seconds
``tests/file_seconds.json`` holds for them (longest first; a file it does
not name after those it does, in pytest's order), with
``--no-loadscope-reorder`` so that xdist keeps it. A file with a test
marked ``alone`` goes out before them all: such a test waits for the test
beside it to end (:mod:`plnlp_testing.alone`), which later in the run may
be a file's minutes-long test, and at the start is its first. Every worker
collects the same order, as xdist requires. Without workers nothing moves.

The figures go stale as tests change, which costs only the order:
``python -m plnlp_testing.longest_first junit.xml`` writes them again from
a run's ``--junitxml`` report."""
import collections
import json
import os
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from plnlp_testing.alone import MARKER as ALONE

SECONDS_FILE = Path(__file__).resolve().parents[1] / "tests" / "file_seconds.json"


def file_seconds() -> dict[str, float]:
    """The seconds each test file took, by its path from the repository root."""
    return json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() else {}


def file_of(item: pytest.Item) -> str:
    """The test file ``item`` is in, as its node id names it."""
    return item.nodeid.split("::")[0]


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """``items``, those of files with an ``alone`` test first, then those of
    longer files; each file's in its own order."""
    alone = {file_of(item) for item in items if item.get_closest_marker(ALONE) is not None}
    return sorted(items, key=lambda item: (file_of(item) not in alone,
                                           -seconds.get(file_of(item), 0.0)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" in os.environ:
        items[:] = longest_first(items, file_seconds())


def seconds_by_file(junit_xml: Path) -> dict[str, float]:
    """The seconds of each test file in a ``--junitxml`` report, longest first."""
    totals: collections.Counter[str] = collections.Counter()
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        module = [part for part in case.get("classname", "").split(".") if not part[:1].isupper()]
        totals["/".join(module) + ".py"] += float(case.get("time", 0))
    return {path: round(total, 1) for path, total in totals.most_common()}


if __name__ == "__main__":
    SECONDS_FILE.write_text(json.dumps(seconds_by_file(Path(sys.argv[1])), indent=1) + "\n")
