"""The suite's Ray runs its workers as the other pytest worker's processes
run: at the tests' own niceness, with OpenMP threads that sleep while
they wait (see :mod:`plnlp_testing.shared_cores`)."""
import os

import pytest

from plnlp_testing.shared_cores import SHARED_CORE_SETTINGS

pytestmark = pytest.mark.slow


def test_the_suite_s_ray_workers_run_at_the_tests_own_niceness(ray_session):
    @ray_session.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray_session.get(niceness.remote()) == os.nice(0)


def test_the_suite_s_ray_workers_share_the_cores_as_the_tests_do(ray_session):
    @ray_session.remote
    def settings() -> dict[str, str | None]:
        return {name: os.environ.get(name) for name in SHARED_CORE_SETTINGS}

    assert ray_session.get(settings.remote()) == SHARED_CORE_SETTINGS
