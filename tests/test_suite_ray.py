"""The suite's Ray runs its workers at the tests' own priority, as the
other pytest worker's processes run (see tests/conftest.py)."""
import os

import pytest

pytestmark = pytest.mark.slow


def test_the_suite_s_ray_workers_run_at_the_tests_own_niceness(ray_session):
    @ray_session.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray_session.get(niceness.remote()) == os.nice(0)
