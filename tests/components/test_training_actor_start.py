"""A run of one worker starts its training actor before the stages that
come first, and neither waits on the other for CPUs; on one node, the
driver's next training of the same worker group takes the actor the last
one kept."""
import time

import pytest
import ray

from components.train import training_actor
from components.train.worker_group import WorkerGroup
from pipelines.run import main

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


def test_on_one_node_an_actor_that_fits_beside_a_stage_holds_no_cpus_either(ray_session):
    """Two runs started at once on one node of 2 CPUs (two commands on a
    machine's ``ray start --head``) would each find one CPU for the actor
    and one for a stage free, and their actors would hold both for good."""
    workers = WorkerGroup(cpus_per_worker=1)
    with training_actor.training_actor_started(workers):
        actor, unreserved = training_actor._STARTED[workers]
        assert unreserved and ray.get(actor.reports_after.remote(0, 0.0)) == ([], False)
        assert free_cpus_become(2)


def test_on_several_nodes_an_actor_that_fits_beside_a_stage_holds_its_cpus_from_the_start(
        ray_session, monkeypatch):
    monkeypatch.setattr(training_actor, "on_one_node", lambda: False)
    workers = WorkerGroup(cpus_per_worker=1)
    with training_actor.training_actor_started(workers):
        actor, unreserved = training_actor._STARTED[workers]
        assert not unreserved and ray.get(actor.reports_after.remote(0, 0.0)) == ([], False)
        assert free_cpus_become(1)


def kept_actor() -> ray.actor.ActorHandle | None:
    return training_actor._KEPT[0][1] if training_actor._KEPT else None


def ends(actor: ray.actor.ActorHandle, within_s: float = 30.0) -> bool:
    """Whether ``actor`` stops answering within ``within_s`` (``ray.kill``
    lands a moment after it returns)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.next_training.remote(), timeout=within_s)
        except ray.exceptions.RayActorError:
            return True
        time.sleep(0.1)
    return False


def test_the_next_training_of_a_driver_takes_the_actor_the_last_one_kept(
        ray_session, mlflow_store, standin_root):
    """Two runs of the main job in one process (a notebook's): the second
    trains in the actor the first kept, at once. A run naming a part of
    one's own trains in a new actor and keeps none (its module may be
    edited before the next run), a run of two workers or one whose actor
    holds its CPUs ends a kept one, and one that died while kept is not
    taken."""
    smoke = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root),
             "--set", "epochs=1", "--set", "embedding_dim=8", "--set", "hidden_channels=8",
             "--set", "predictor_hidden=8"]
    assert main(smoke) == 0
    first = kept_actor()
    assert first is not None
    assert main([*smoke, "--seed", "1"]) == 0
    assert kept_actor() is not None and kept_actor()._actor_id == first._actor_id
    assert main([*smoke, "--set", "encoder=examples.link_parts.layers:GINLayer"]) == 0
    assert kept_actor() is None and ends(first)

    assert main(smoke) == 0
    kept = kept_actor()
    with training_actor.training_actor_started(WorkerGroup(num_workers=2, cpus_per_worker=1)):
        assert kept_actor() is None
    assert kept is not None and ends(kept)

    assert main(smoke) == 0  # a run whose actor holds its CPUs from the start ends a kept one
    workers, kept, _ = training_actor._KEPT[0]
    with pytest.MonkeyPatch.context() as patch:  # on several nodes, as fits there
        patch.setattr(training_actor, "on_one_node", lambda: False)
        patch.setattr(training_actor, "fits_beside_a_stage", lambda _: True)
        with training_actor.training_actor_started(workers):
            started, unreserved = training_actor._STARTED[workers]
            assert not unreserved and started._actor_id != kept._actor_id
            assert kept_actor() is None
    assert ends(kept)

    assert main(smoke) == 0  # one that died while kept is not taken
    workers, dead, _ = training_actor._KEPT[0]
    ray.kill(dead)
    assert ends(dead)
    assert training_actor.kept_for_the_next_training(workers) is None and kept_actor() is None
