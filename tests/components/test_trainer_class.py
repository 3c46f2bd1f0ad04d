"""Which Ray Train trainer the train stage builds for a worker group."""
from types import SimpleNamespace

import pytest
import ray.train.torch
from ray.exceptions import ActorDiedError
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from components.storage.location import Location
from components.train import stage
from components.train.stage import trainer_class
from components.train.workers import WorkerGroup


def test_a_single_worker_runs_without_torch_process_group():
    chosen = trainer_class(WorkerGroup(num_workers=1, use_gpu=True))
    assert chosen is DataParallelTrainer
    assert not issubclass(chosen, ray.train.torch.TorchTrainer)


def test_a_ddp_group_runs_under_the_torch_trainer():
    assert trainer_class(WorkerGroup(num_workers=2)) is ray.train.torch.TorchTrainer


class FlakyTrainer:
    """A trainer whose first ``len(failures)`` fits raise the given errors."""

    failures: list[Exception] = []
    fits = 0

    def __init__(self, *args, **kwargs) -> None:
        self.run_config = kwargs["run_config"]

    def fit(self) -> SimpleNamespace:
        FlakyTrainer.fits += 1
        if FlakyTrainer.failures:
            raise FlakyTrainer.failures.pop(0)
        return SimpleNamespace(checkpoint=SimpleNamespace(path=f"{self.run_config.name}/ckpt"))


@pytest.fixture
def flaky(monkeypatch):
    FlakyTrainer.fits = 0
    monkeypatch.setattr(stage, "trainer_class", lambda workers: FlakyTrainer)
    return FlakyTrainer


def test_a_worker_dying_as_its_group_starts_fits_again_under_the_same_name(
        flaky, capsys, tmp_path):
    flaky.failures = [ray.train.ControllerError(ActorDiedError())]
    newest = stage.fit_worker_group({}, WorkerGroup(), Location(str(tmp_path)), "run-a",
                                    max_failures=2, callbacks=[])
    assert newest == "run-a/ckpt" and flaky.fits == 2
    assert "starting a new group from the newest checkpoint (1 of 2" in capsys.readouterr().out


def test_other_controller_errors_and_deaths_past_max_failures_are_raised(flaky, tmp_path):
    flaky.failures = [ray.train.ControllerError(ValueError("a bug"))]
    with pytest.raises(ray.train.ControllerError, match="a bug"):
        stage.fit_worker_group({}, WorkerGroup(), Location(str(tmp_path)), "run-b", 3, [])
    assert flaky.fits == 1
    flaky.failures = [ray.train.ControllerError(ActorDiedError()) for _ in range(2)]
    with pytest.raises(ray.train.ControllerError):
        stage.fit_worker_group({}, WorkerGroup(), Location(str(tmp_path)), "run-c", 1, [])
    assert flaky.fits == 3
