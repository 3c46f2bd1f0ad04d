"""Which Ray Train trainer the train stage builds for a worker group."""
import ray.train.torch
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from components.train.stage import trainer_class
from components.train.workers import WorkerGroup


def test_a_single_worker_runs_without_torch_process_group():
    chosen = trainer_class(WorkerGroup(num_workers=1, use_gpu=True))
    assert chosen is DataParallelTrainer
    assert not issubclass(chosen, ray.train.torch.TorchTrainer)


def test_a_ddp_group_runs_under_the_torch_trainer():
    assert trainer_class(WorkerGroup(num_workers=2)) is ray.train.torch.TorchTrainer
