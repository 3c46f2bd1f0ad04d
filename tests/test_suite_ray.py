"""The suite's Ray runs its workers as the other pytest worker's processes
run: at the tests' own niceness, with OpenMP threads that sleep while
they wait (see :mod:`plnlp_testing.shared_cores`); and as a command's own
local Ray runs them, with full garbage collections rarer."""
import gc
import os

import pytest

from pipelines.runtime.worker_collections import FULL_COLLECTION_THRESHOLD
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


def test_the_suite_s_ray_workers_collect_garbage_as_a_local_ray_s_do(ray_session):
    @ray_session.remote
    def full_collection_threshold() -> int:
        return gc.get_threshold()[2]

    assert ray_session.get(full_collection_threshold.remote()) == FULL_COLLECTION_THRESHOLD
