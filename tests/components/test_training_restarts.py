"""How the train stage starts its training again after a death: a DDP
worker group fitted again under its name, a one-worker run's actor
replaced; and what neither restarts."""
from types import SimpleNamespace

import pytest
import ray.train.torch
from ray.exceptions import ActorDiedError, RayTaskError

from components.storage.location import Location
from components.train import stage, training_actor
from components.train.worker_group import WorkerGroup
from plnlp_core.errors import PLNLPError


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
    monkeypatch.setattr(ray.train.torch, "TorchTrainer", FlakyTrainer)
    return FlakyTrainer


def test_a_worker_dying_as_its_group_starts_fits_again_under_the_same_name(
        flaky, capsys, tmp_path):
    flaky.failures = [ray.train.ControllerError(ActorDiedError())]
    newest = stage.fit_worker_group({}, WorkerGroup(2), Location(str(tmp_path)), "run-a",
                                    max_failures=2, callbacks=[])
    assert newest == "run-a/ckpt" and flaky.fits == 2
    assert "starting a new group from the newest checkpoint (1 of 2" in capsys.readouterr().out


def test_other_controller_errors_and_deaths_past_max_failures_are_raised(flaky, tmp_path):
    flaky.failures = [ray.train.ControllerError(ValueError("a bug"))]
    with pytest.raises(ray.train.ControllerError, match="a bug"):
        stage.fit_worker_group({}, WorkerGroup(2), Location(str(tmp_path)), "run-b", 3, [])
    assert flaky.fits == 1
    flaky.failures = [ray.train.ControllerError(ActorDiedError()) for _ in range(2)]
    with pytest.raises(ray.train.ControllerError):
        stage.fit_worker_group({}, WorkerGroup(2), Location(str(tmp_path)), "run-c", 1, [])
    assert flaky.fits == 3


class FlakyActors:
    """Stands in for :class:`TrainingActor`: the first ``len(outcomes)``
    actors' training raise the given errors, later ones return a path.
    Records the resources each actor asked for and which were killed."""

    def __init__(self, outcomes: list[Exception]) -> None:
        self.outcomes, self.started, self.killed = outcomes, [], []

    def options(self, **resources: float) -> "FlakyActors":
        self.started.append(resources)
        return self

    def remote(self) -> SimpleNamespace:
        actor = SimpleNamespace(number=len(self.started))
        actor.train = SimpleNamespace(remote=lambda *args: actor)
        actor.reports_after = SimpleNamespace(remote=lambda *args: ([], True))
        return actor

    def get(self, actor: SimpleNamespace | tuple, timeout: float | None = None) -> str | tuple:
        if isinstance(actor, tuple):  # its reports: none, and the training has ended
            return actor
        if actor.number <= len(self.outcomes):
            raise self.outcomes[actor.number - 1]
        return f"checkpoint-of-actor-{actor.number}"

    def kill(self, actor: SimpleNamespace, no_restart: bool) -> None:
        self.killed.append(actor.number)


@pytest.fixture
def actors(monkeypatch):
    """Fake actors, and none started ahead or kept by an earlier test of this
    process (a real one kept by the suite's Ray stays kept for the next)."""
    monkeypatch.setattr(training_actor, "_STARTED", {})
    monkeypatch.setattr(training_actor, "_KEPT", [])

    def install(outcomes: list[Exception]) -> FlakyActors:
        fake = FlakyActors(outcomes)
        monkeypatch.setattr(training_actor, "TrainingActor", fake)
        monkeypatch.setattr(training_actor.ray, "get", fake.get)
        monkeypatch.setattr(training_actor.ray, "kill", fake.kill)
        return fake
    return install


TWO_CPUS = WorkerGroup(cpus_per_worker=2)


def fit_one(tmp_path, max_failures: int, workers: WorkerGroup = TWO_CPUS) -> str:
    return training_actor.fit_training_actor({}, workers, Location(str(tmp_path)),
                                             max_failures, [])


def test_a_dead_training_actor_is_replaced_and_every_actor_is_ended(actors, capsys, tmp_path):
    fake = actors([ActorDiedError(), ActorDiedError()])
    assert fit_one(tmp_path, max_failures=2) == "checkpoint-of-actor-3"
    assert fake.started == [{"num_cpus": 2, "num_gpus": 0}] * 3 and fake.killed == [1, 2, 3]
    assert "starting a new one from the newest checkpoint (2 of 2 restarts)" \
        in capsys.readouterr().out


def test_a_training_actor_asks_for_its_share_of_a_gpu(actors, tmp_path):
    fake = actors([])
    fit_one(tmp_path, 0, WorkerGroup(use_gpu=True, gpus_per_worker=0.5))
    assert fake.started == [{"num_cpus": 1, "num_gpus": 0.5}]


def test_deaths_past_max_failures_end_the_run(actors, tmp_path):
    fake = actors([ActorDiedError(), ActorDiedError()])
    with pytest.raises(ActorDiedError):
        fit_one(tmp_path, max_failures=1)
    assert fake.killed == [1, 2]


def test_an_error_the_training_raises_ends_the_run_as_itself_with_the_actors_traceback(
        actors, tmp_path):
    cause = PLNLPError("the graph has no edges; give it some.")
    remote = RayTaskError("train", 'Traceback (most recent call last):\n  File "components/train/'
                          'worker.py", line 60, in train_with\n    split = read_split(found)\n'
                          f"plnlp_core.errors.PLNLPError: {cause}", cause)
    fake = actors([remote])
    with pytest.raises(PLNLPError) as raised:
        fit_one(tmp_path, max_failures=3)
    assert raised.value is cause and str(raised.value) == "the graph has no edges; give it some."
    assert 'worker.py", line 60, in train_with' in "\n".join(raised.value.__notes__)
    assert fake.killed == [1]  # not retried: it would fail again
