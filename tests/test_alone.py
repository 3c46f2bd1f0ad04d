"""Under pytest -n 2, a test marked ``alone`` runs with no other test
beside it (:mod:`plnlp_testing.alone`), while the others run two at once."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # two pytest workers start: about 5 s

TIMED = """
import time
from pathlib import Path

import pytest


def timed(name, seconds):
    start = time.time()
    time.sleep(seconds)
    Path({times!r}, name).write_text(f"{{start}} {{time.time()}}")
"""

# one file a worker (--dist=loadfile): the alone test asks for its turn
# about 1 s into the other worker's 3 s test
BUSY = "def test_busy():\n    timed('busy', 3.0)\n"
QUIET = ("def test_first():\n    timed('first', 1.0)\n\n\n"
         "@pytest.mark.alone\ndef test_then_alone():\n    timed('alone', 0.5)\n")


def overlap(first: tuple[float, float], second: tuple[float, float]) -> bool:
    return first[0] < second[1] and second[0] < first[1]


def test_an_alone_test_waits_for_the_test_beside_it_and_the_others_run_two_at_once(tmp_path):
    times = tmp_path / "times"
    times.mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, tests in (("busy", BUSY), ("quiet", QUIET)):
        (tmp_path / f"test_{name}.py").write_text(TIMED.format(times=str(times)) + tests)
    scratch = tmp_path / "scratch"  # the workers' temporary folder: the lock's files
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist=loadfile",
                           "-p", "plnlp_testing.alone", "-p", "no:cacheprovider", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stdout[-3000:]
    assert list(scratch.glob("plnlp-tests-*")) == []  # the workers removed them as they ended
    span = {path.name: tuple(map(float, path.read_text().split())) for path in times.iterdir()}
    assert overlap(span["busy"], span["first"]), span
    assert not overlap(span["busy"], span["alone"]), span
