"""A search space file read against the preset it varies."""
from pathlib import Path

import pytest

from pipelines.planning.arguments import sweep_request
from pipelines.planning.presets import load_preset
from pipelines.planning.request import SweepRequest
from pipelines.planning.sweep_plan import gpus_per_worker
from pipelines.planning.sweep_space import SearchSpace
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError

LR = {"lr": {"choice": [0.01, 0.05]}}


def space_with(resources: dict) -> SearchSpace:
    base = PLNLPConfig.from_mapping({**load_preset("ddi", "smoke"), "dataset": "ddi"})
    return SearchSpace(Path("space.yaml"), base, DATASETS.get("ddi"), {"space": LR}, resources)


def space_of(data: dict, epochs: int) -> SearchSpace:
    base = PLNLPConfig.from_mapping({**load_preset("ddi", "smoke"), "dataset": "ddi",
                                     "epochs": epochs})
    return SearchSpace(Path("space.yaml"), base, DATASETS.get("ddi"), {"space": LR, **data})


def test_a_grace_period_above_the_trials_epochs_is_lowered_to_them_with_a_note(capsys):
    space = space_of({"scheduler": {"asha": {"grace_period": 20, "reduction_factor": 3}}}, 3)
    assert space.asha == {"grace_period": 3, "reduction_factor": 3, "max_t": 3}
    assert space.decision_epochs() == [3]
    assert capsys.readouterr().out.strip() == (
        "note: search space space.yaml: scheduler.asha.grace_period 20 is lowered to 3, the "
        "epochs a trial runs (max_t defaults to the preset's epochs)")


def test_asha_decides_at_its_rungs_up_to_max_t():
    space = space_of({"scheduler": {"asha": {"grace_period": 5, "reduction_factor": 2}}}, 60)
    assert space.decision_epochs() == [5, 10, 20, 40]
    assert space_of({}, 60).decision_epochs() == []


def test_trials_of_one_worker_hold_their_resources_in_their_own_actor():
    from pipelines.runtime.sweep import GROUP_TRIAL_RESOURCES, trial_resources

    alone = space_with({"workers": 1, "cpus_per_worker": 2, "gpus_per_worker": 0.25})
    assert trial_resources(alone) == {"CPU": 2, "GPU": 0.25}
    group = space_with({"workers": 2, "cpus_per_worker": 1})
    assert trial_resources(group) == GROUP_TRIAL_RESOURCES


def test_trials_per_gpu_packs_that_many_trials_on_each_gpu():
    request = SweepRequest(dataset="ddi", trials_per_gpu=4)
    assert gpus_per_worker(request) == 0.25
    space = space_with({"workers": 1, "cpus_per_worker": 1, "gpus_per_worker": 0.25})
    assert space.concurrency({"CPU": 16, "GPU": 2}) == 8
    assert space.concurrency({"CPU": 6, "GPU": 2}) == 6  # the CPUs run out first
    auto = sweep_request(["--dataset", "ddi", "--space", "s.yaml", "--trials-per-gpu", "auto"])
    assert auto.trials_per_gpu == "auto"
    assert gpus_per_worker(auto) == 1.0  # a whole GPU until the sweep packs its trials
    with pytest.raises(SystemExit):
        sweep_request(["--dataset", "ddi", "--space", "s.yaml", "--trials-per-gpu", "many"])
    for refused in (SweepRequest(dataset="ddi", trials_per_gpu=0),
                    SweepRequest(dataset="ddi", trials_per_gpu=2, gpus_per_worker=0.5)):
        with pytest.raises(PLNLPError, match="--trials-per-gpu"):
            gpus_per_worker(refused)


GIN = "examples.link_parts.layers:GINLayer"


def test_a_space_chooses_among_built_in_parts_and_ones_own_and_searches_their_settings():
    parts = {"encoder": {"choice": ["sage", GIN]}, "loss": {"choice": [
        "examples.link_parts.losses:MarginRankingLoss"]}, "loss_options.margin": {
        "grid": [0.5, 1.0]}}
    space = space_of({"space": parts, "search": "grid"}, 2)
    assert space.param_space()["encoder"] == {"grid_search": ["sage", GIN]}
    trial = space.base.replace(encoder=GIN, **{"loss_options.margin": 0.5})
    assert trial.loss_options == {"margin": 0.5}


def test_a_part_s_setting_is_checked_with_each_part_the_space_chooses():
    fixed = SearchSpace(Path("space.yaml"), PLNLPConfig.from_mapping(
        {**load_preset("ddi", "smoke"), "dataset": "ddi", "encoder": GIN}), DATASETS.get("ddi"),
        {"space": {"encoder_options.eps": {"choice": [0.0, 0.1]}}})
    assert fixed.searched == {"encoder_options.eps": {"choice": [0.0, 0.1]}}
    with pytest.raises(PLNLPError, match="encoder_options.eps cannot take 0.0 with encoder "
                                         "'sage': encoder_options sets eps for encoder 'sage', "
                                         "a built-in encoder"):
        space_of({"space": {"encoder": {"choice": [GIN, "sage"]},
                            "encoder_options.eps": {"choice": [0.0]}}}, 2)
    with pytest.raises(PLNLPError, match="encoder_options.heads cannot take 2 with encoder "
                                         f"'{GIN}': encoder_options.heads is not a setting"):
        space_of({"space": {"encoder": {"choice": [GIN]},
                            "encoder_options.heads": {"choice": [2]}}}, 2)
    with pytest.raises(PLNLPError, match="encoder cannot take 'examples.link_parts.layers:GIN': "
                                         "encoder 'examples.link_parts.layers:GIN' names nothing"):
        space_of({"space": {"encoder": {"choice": ["sage", "examples.link_parts.layers:GIN"]}}},
                 2)
