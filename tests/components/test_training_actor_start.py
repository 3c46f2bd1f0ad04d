"""A run of one worker starts its training actor before the stages that
come first, and neither waits on the other for CPUs."""
import time

import pytest
import ray

from components.train import training_actor
from components.train.workers import WorkerGroup

pytestmark = pytest.mark.slow  # the suite's local Ray and its actors


@ray.remote(num_cpus=2)
def two_cpu_stage() -> str:
    return "ran"


def free_cpus_become(count: float, within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while ray.available_resources().get("CPU", 0) != count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_on_one_node_an_actor_of_all_its_cpus_holds_none_until_its_training_reserves_them(
        ray_session):
    workers = WorkerGroup(cpus_per_worker=2)  # every CPU of the suite's 2-CPU local Ray
    with training_actor.training_actor_started(workers):
        actor, unreserved = training_actor._STARTED[workers]
        assert unreserved and ray.get(actor.reports_after.remote(0, 0.0)) == ([], False)
        assert ray.get(two_cpu_stage.remote(), timeout=60) == "ran"  # a stage beside it
        with training_actor.cpus_reserved(2):
            assert free_cpus_become(0)
        assert free_cpus_become(2)
    assert workers not in training_actor._STARTED  # not taken by a training: ended


def test_an_actor_that_fits_beside_a_stage_holds_its_cpus_from_the_start(ray_session):
    workers = WorkerGroup(cpus_per_worker=1)
    with training_actor.training_actor_started(workers):
        actor, unreserved = training_actor._STARTED[workers]
        assert not unreserved and ray.get(actor.reports_after.remote(0, 0.0)) == ([], False)
        assert free_cpus_become(1)
