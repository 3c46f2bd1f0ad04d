"""A search space file read against the preset it varies."""
from pathlib import Path

from pipelines.planning.presets import load_preset
from pipelines.planning.sweep_space import SearchSpace
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS

LR = {"lr": {"choice": [0.01, 0.05]}}


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
