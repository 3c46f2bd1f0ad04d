"""Stage ``train``: Ray Train runs PLNLP on N workers (DDP, under a
``TorchTrainer``); each worker ranks its share of the positive pairs (see
:func:`components.training.worker.train_worker`)."""
import json
from collections.abc import Collection

import ray.train
import ray.train.torch
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from components.artifacts import DatasetArtifact, TrainArtifact, WalkArtifact
from components.recording.epoch_logger import EpochLogger
from components.storage.location import Location, location
from components.training.checkpoints import BEST_DIR, BEST_FILE, HISTORY_FILE, TIMING_FILE
from components.training.startup import mark
from components.training.worker import train_worker
from components.training.workers import WorkerGroup
from plnlp_core.config import PLNLPConfig


def train(
    dataset: DatasetArtifact, walks: WalkArtifact | None, config: PLNLPConfig,
    storage: "str | Location", workers: WorkerGroup | None = None,
    tracking_uri: str | None = None, run_id: str | None = None, max_failures: int = 3,
    callbacks: list[ray.train.UserCallback] = (), decision_epochs: Collection[int] = (),
    export: bool = False,
) -> TrainArtifact:
    """Trains with the DDP ``workers`` and returns the checkpoint of the best
    validation epoch. With ``run_id``, every epoch's metrics are logged to
    that MLflow run. ``decision_epochs`` are the epochs at which a sweep's
    scheduler decides: their evaluations are reported at once.

    Every ``config.checkpoint_every`` epochs (and after the last) the whole
    training state is checkpointed under ``storage``. When a worker or the
    worker group dies, Ray Train starts a new group up to ``max_failures``
    times, and training goes on from the latest checkpoint; a new call with
    the same ``storage`` and ``run_id`` (``--resume``) does the same.
    ``callbacks`` see every report after the MLflow logger has. With
    ``export``, rank 0 ends by writing the final metrics and the best
    model's scorer into ``storage``, in place of an earlier attempt's (see
    :mod:`components.final_export`)."""
    workers = workers or WorkerGroup()
    trainer = trainer_class(workers)(
        train_worker,
        train_loop_config={
            "config": config.to_dict(), "dataset_dir": dataset.directory, "walks": walks,
            "decision_epochs": sorted(decision_epochs),
            "export_dir": location(storage).uri if export else None,
        },
        scaling_config=workers.scaling_config(),
        run_config=ray.train.RunConfig(
            name=f"plnlp-{config.dataset}-{run_id or 'run'}",
            storage_path=location(storage).uri,
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1),
            failure_config=ray.train.FailureConfig(max_failures=max_failures),
            callbacks=[*([EpochLogger(tracking_uri, run_id)] if run_id else []), *callbacks],
            logging_config=ray.train.LoggingConfig(log_level="WARNING"),
        ),
    )
    mark("augment")  # the walks, if any, are at hand
    result = trainer.fit()
    checkpoint = location(storage).relative(result.checkpoint.path)
    best = json.loads((checkpoint / BEST_DIR / BEST_FILE).read_text())
    history = json.loads((checkpoint / HISTORY_FILE).read_text())
    timing = json.loads((checkpoint / TIMING_FILE).read_text())
    return TrainArtifact((checkpoint / BEST_DIR).uri, best["epoch"], best["metrics"], history,
                         timing["fit_seconds"], timing.get("startup", {}))


def trainer_class(workers: WorkerGroup) -> type[DataParallelTrainer]:
    """``TorchTrainer`` for a DDP group; Ray Train's plain data-parallel
    trainer, the ``TorchTrainer``'s own base, for a single worker, which
    needs no process group. Without the torch backend the Train controller
    does not import torch and the worker sets up no gloo or NCCL group: on
    2 CPU cores an empty function starts 2.8 s sooner, the pipeline's first
    epoch about 1 s sooner (benchmarks/README.md)."""
    return ray.train.torch.TorchTrainer if workers.num_workers > 1 else DataParallelTrainer
