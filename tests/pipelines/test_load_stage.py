"""The load stage of a run's seeds: one split a seed where the split is
drawn (Planetoid's), their new outputs' tasks submitted together."""
from pathlib import Path

import pytest
import ray

from pipelines.planning.request import GraphFlags, RunRequest
from pipelines.planning.run_plan import plan_run
from pipelines.run import seed_graphs
from pipelines.runtime import load_stage as load_stage_module
from pipelines.runtime.load_stage import load_stages
from pipelines.runtime.storage_roots import StorageRoots


def test_a_drawn_split_gives_each_seed_its_own_split_seed():
    plan = plan_run(RunRequest(dataset="cora", runs=3, graph=GraphFlags(split_seed=5)))
    assert [graph.split_seed for graph in seed_graphs(plan)] == [5, 6, 7]
    assert len(seed_graphs(plan_run(RunRequest(dataset="ddi", preset="smoke", runs=3)))) == 1


@pytest.mark.slow
def test_the_seeds_splits_load_in_one_round_of_tasks_and_are_reused(
    ray_session, ddi_root: Path, tmp_path, monkeypatch,
):
    plan = plan_run(RunRequest(dataset="cora", runs=3))
    roots = StorageRoots.of(str(tmp_path / "work"), str(ddi_root))
    waits, get = [], ray.get
    monkeypatch.setattr(load_stage_module.ray, "get",
                        lambda refs: waits.append(len(refs)) or get(refs))
    first = load_stages(plan.source, seed_graphs(plan), roots)
    assert waits == [3]  # the three tasks ran side by side, waited for once
    assert len({dataset.directory.uri for dataset in first}) == 3
    again = load_stages(plan.source, seed_graphs(plan), roots)
    assert waits == [3, 0]  # all three found in the stage cache: no task
    assert [dataset.directory for dataset in again] == [dataset.directory for dataset in first]
