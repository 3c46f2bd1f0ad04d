"""A pytest plugin for the suite run in workers (pytest-xdist's ``-n 2``):
a test marked ``alone`` runs with no other test beside it.

Every test holds a lock of the run while it runs, from its fixtures'
set-up to their tear-down: shared, or, for an ``alone`` test, alone. An
``alone`` test that waits for the lock holds a gate that every test passes
on its way to the lock, so that the other workers do not take it again
meanwhile and the ``alone`` test waits at most for the tests already
running. Without workers it does nothing."""
import fcntl
import os
import tempfile
from pathlib import Path

import pytest

MARKER = "alone"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: under pytest -n 2, no other test runs beside it (it times "
                   "itself against a quiet machine, or meets a fixed deadline of a tool it runs)")


def lock_files() -> tuple[Path, Path] | None:
    """The gate and the lock of this run of workers; None outside one."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return None
    folder = Path(tempfile.gettempdir())
    return folder / f"plnlp-tests-{run}.gate", folder / f"plnlp-tests-{run}.lock"


def pytest_unconfigure(config: pytest.Config) -> None:
    """A worker ends with no test left to start: no test runs beside the
    others' any more (one still running makes the files again)."""
    for path in lock_files() or ():
        path.unlink(missing_ok=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    if (files := lock_files()) is None:
        return (yield)
    alone = item.get_closest_marker(MARKER) is not None
    with open(files[0], "a") as gate, open(files[1], "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        return (yield)
