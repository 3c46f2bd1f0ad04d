"""Trials packed onto a GPU by their estimated peak memory: as many as fit
with a tenth left free, the largest trial of the space counted, and a number
that does not fit refused in one sentence."""
from pathlib import Path

import pytest

from components.storage.split_meta import DatasetMeta
from pipelines.planning.gpu_packing import (
    check_packing,
    pack_trials,
    packed_trials,
    trial_peak_bytes,
)
from pipelines.planning.sweep_space import SearchSpace
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.memory_estimate import peak_gpu_bytes

GIB = 2**30
DDI = DATASETS.get("ddi")
META = DatasetMeta("ddi", 4267, False, 0, "hits@20", 1_067_911)
BASE = PLNLPConfig(embedding_dim=64, hidden_channels=64, predictor="mlp", predictor_hidden=64)


def test_as_many_trials_as_fit_with_a_tenth_left_free():
    assert packed_trials(10 * GIB, 141 * GIB) == 12  # 126.9 GiB usable
    assert packed_trials(10 * GIB, 80 * GIB) == 7
    with pytest.raises(PLNLPError, match="a trial needs about 90.0 GiB of GPU memory by its "
                                         "estimate and the GPU has 80.0 GiB; lower batch_size"):
        packed_trials(90 * GIB, 80 * GIB)


def test_a_number_that_does_not_fit_is_refused_naming_the_one_that_does():
    check_packing(7, 10 * GIB, 80 * GIB)
    with pytest.raises(PLNLPError) as refused:
        check_packing(8, 10 * GIB, 80 * GIB)
    assert str(refused.value) == (
        "--trials-per-gpu 8: each trial needs about 10.0 GiB of GPU memory by its estimate, so 8 "
        "need 80.0 GiB and the GPU has 80.0 GiB; give --trials-per-gpu 7 or fewer, or "
        "--trials-per-gpu auto.")


def test_the_largest_trial_of_the_space_is_the_one_packed():
    searched = {"hidden_channels": {"choice": [32, 256]}, "batch_size": {"randint": [1024, 9000]},
                "lr": {"loguniform": [0.001, 0.1]}}
    largest = BASE.replace(hidden_channels=256, batch_size=9000)
    assert trial_peak_bytes(BASE, searched, DDI, 4267, 1_067_911) == peak_gpu_bytes(
        largest, DDI, 4267, 1_067_911)
    assert trial_peak_bytes(BASE, {}, DDI, 4267, 1_067_911) == peak_gpu_bytes(
        BASE, DDI, 4267, 1_067_911)


def space(resources: dict) -> SearchSpace:
    return SearchSpace(Path("space.yaml"), BASE, DDI, {"space": {"lr": {"choice": [0.01, 0.1]}}},
                       resources)


def test_auto_gives_each_trial_its_share_and_says_so():
    swept = space({"workers": 1, "cpus_per_worker": 1, "gpus_per_worker": 1.0})
    trial = peak_gpu_bytes(BASE, DDI, 4267, 1_067_911)
    resources, line = pack_trials("auto", swept, META, 141 * GIB)
    fits = int(0.9 * 141 * GIB // trial)
    assert resources.gpus_per_worker == pytest.approx(1 / fits)
    assert swept.resources.gpus_per_worker == 1.0  # the space is left as it is
    assert line.startswith(f"{fits} trials a GPU: each needs about ")
    given = space({"gpus_per_worker": 1 / fits})
    assert pack_trials(fits, given, META, 141 * GIB)[0] == given.resources
    with pytest.raises(PLNLPError, match=f"give --trials-per-gpu {fits} or fewer"):
        pack_trials(fits + 1, space({"gpus_per_worker": 1 / (fits + 1)}), META, 141 * GIB)
