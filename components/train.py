"""Stage ``train``: Ray Train's ``TorchTrainer`` runs PLNLP on N workers
(DDP); each worker ranks its shard of the positive pairs."""
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from components.artifacts import DatasetArtifact, TrainArtifact, WalkArtifact
from components.parquet_io import pairs_table, read_split
from components.walk_rounds import ParquetWalkRounds
from plnlp_core.config import PLNLPConfig
from plnlp_core.experiment import (
    EpochResult,
    build_input_adjacency,
    build_model,
    fit,
    training_positives,
)
from plnlp_core.graph import TrainingGraph
from plnlp_core.losses import WEIGHTED_LOSSES

CHECKPOINT_FILE = "model.pt"
BEST_FILE = "best.json"


def positives_datasets(
    dataset: DatasetArtifact, config: PLNLPConfig,
) -> dict[str, ray.data.Dataset]:
    """The observed edges ranked every epoch and their margins, as the Ray
    Dataset ``positives`` Train shards across workers (none when walk pairs
    alone are ranked). When they are exactly the training edges, Ray tasks
    read ``train.parquet`` into the object store instead of this process
    holding a copy; they read before training starts, while the workers do
    not yet hold the cluster's CPUs."""
    ray.data.DataContext.get_current().enable_progress_bars = False
    if config.walk_positives == "walks":
        return {}
    if uses_training_edges_as_is(config):
        return {"positives": ray.data.read_parquet(
            str(Path(dataset.directory) / "train.parquet"), columns=["src", "dst"]).materialize()}
    positives, weights = training_positives(read_split(Path(dataset.directory)), config)
    return {"positives": ray.data.from_arrow(pairs_table(positives, weight=weights))}


def uses_training_edges_as_is(config: PLNLPConfig) -> bool:
    """Whether the positives are the training edges, unweighted and unfiltered."""
    return (config.min_train_year is None and not config.valid_as_input
            and config.loss not in WEIGHTED_LOSSES and config.walk_positives == "union")


@dataclass(frozen=True)
class WorkerGroup:
    """The DDP workers of one training run: ``num_workers`` workers, each
    holding ``cpus_per_worker`` CPUs (torch uses that many threads) and one
    GPU with ``use_gpu``."""

    num_workers: int = 1
    cpus_per_worker: int = 1
    use_gpu: bool = False

    def resources(self) -> dict[str, float]:
        """What the whole group holds of the cluster."""
        per_worker = self.scaling_config().resources_per_worker
        return {name: amount * self.num_workers for name, amount in per_worker.items()}

    def scaling_config(self) -> ray.train.ScalingConfig:
        per_worker = {"CPU": self.cpus_per_worker, **({"GPU": 1} if self.use_gpu else {})}
        return ray.train.ScalingConfig(num_workers=self.num_workers, use_gpu=self.use_gpu,
                                       resources_per_worker=per_worker)


def train(
    dataset: DatasetArtifact, walks: WalkArtifact | None, config: PLNLPConfig,
    work_dir: str, workers: WorkerGroup = WorkerGroup(),
    tracking_uri: str | None = None, run_id: str | None = None,
) -> TrainArtifact:
    """Trains with the DDP ``workers`` and returns the checkpoint of the best
    validation epoch. With ``run_id``, rank 0 logs every epoch's metrics to
    that MLflow run."""
    trainer = ray.train.torch.TorchTrainer(
        train_worker,
        train_loop_config={
            "config": config.to_dict(), "dataset_dir": dataset.directory, "walks": walks,
            "tracking_uri": tracking_uri, "run_id": run_id,
        },
        scaling_config=workers.scaling_config(),
        run_config=ray.train.RunConfig(
            name=f"plnlp-{config.dataset}-{run_id or 'run'}",
            storage_path=str(Path(work_dir).resolve() / "ray_results"),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1),
        ),
        datasets=positives_datasets(dataset, config),
    )
    result = trainer.fit()
    checkpoint_dir = result.checkpoint.path
    best = json.loads((Path(checkpoint_dir) / BEST_FILE).read_text())
    return TrainArtifact(checkpoint_dir, best["epoch"], best["metrics"], result.return_value)


def train_worker(loop_config: dict) -> list[dict[str, float]]:
    """Ray Train's per-worker function: everything it needs arrives in
    ``loop_config`` and the ``positives`` dataset shard."""
    config = PLNLPConfig.from_mapping(loop_config["config"])
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    split = read_split(Path(loop_config["dataset_dir"]))
    adj, degree = build_input_adjacency(split, config)
    walks = loop_config["walks"]
    rounds = None if walks is None else ParquetWalkRounds(walks, rank, world_size)
    graph = TrainingGraph(adj, degree, *_read_positives(config), rounds)
    torch.manual_seed(config.seed)
    model = ray.train.torch.prepare_model(build_model(config, split.info, split.num_nodes))
    reporter = EpochReporter(config, split.info.main_metric_key, rank, world_size,
                             loop_config["tracking_uri"], loop_config["run_id"])
    fit(model, config, split, graph, world_size, rank, on_epoch=reporter)
    return reporter.history


def _read_positives(config: PLNLPConfig) -> tuple[torch.Tensor, torch.Tensor | None]:
    """This worker's shard of the ``positives`` dataset, if there is one."""
    if config.walk_positives == "walks":
        return torch.empty(0, 2, dtype=torch.long), None
    shard = ray.train.get_dataset_shard("positives")
    pairs, weights = [], []
    for batch in shard.iter_batches(batch_size=1 << 20, batch_format="numpy"):
        pairs.append(torch.from_numpy(np.stack([batch["src"], batch["dst"]], axis=-1)).long())
        if "weight" in batch:
            weights.append(torch.from_numpy(batch["weight"]).float())
    if not pairs:
        return torch.empty(0, 2, dtype=torch.long), None
    return torch.cat(pairs), torch.cat(weights) if weights else None


class EpochReporter:
    """Called after every epoch on every worker: reports to Ray Train (a
    barrier), and on rank 0 prints one progress line, logs to MLflow and
    attaches the checkpoint when validation improved."""

    def __init__(
        self, config: PLNLPConfig, main_metric: str, rank: int, world_size: int,
        tracking_uri: str | None, run_id: str | None,
    ) -> None:
        self.config = config
        self.main_metric = main_metric
        self.rank = rank
        self.world_size = world_size
        self.run_id = run_id
        self.client = MlflowClient(tracking_uri) if run_id and rank == 0 else None
        self.history: list[dict[str, float]] = []

    def __call__(self, result: EpochResult) -> None:
        loss = self._global_loss(result.train_loss)
        metrics = {"epoch": result.epoch, "train_loss": loss, "epoch_seconds": result.seconds,
                   **result.metrics}
        if self.rank == 0:
            self.history.append(metrics)
            self._print(metrics)
            self._log(metrics)
        if result.best_state is None:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as directory:
            torch.save(result.best_state, Path(directory) / CHECKPOINT_FILE)
            best = {"epoch": result.epoch, "metrics": result.metrics}
            (Path(directory) / BEST_FILE).write_text(json.dumps(best))
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))

    def _global_loss(self, loss: float) -> float:
        if self.world_size == 1:
            return loss
        total = torch.tensor([loss], dtype=torch.float64, device=ray.train.torch.get_device())
        dist.all_reduce(total)  # on the workers' device: NCCL takes no CPU tensors
        return float(total) / self.world_size

    def _print(self, metrics: dict[str, float]) -> None:
        keys = (f"valid_{self.main_metric}", f"test_{self.main_metric}")
        shown = [f"{key} {metrics[key]:.4f}" for key in keys if key in metrics]
        line = (f"epoch {metrics['epoch']}/{self.config.epochs}  loss {metrics['train_loss']:.5f}  "
                + "  ".join(shown) + f"  ({metrics['epoch_seconds']:.1f} s)")
        # Ray Train tees a plain print to stdout and its logger; write once.
        print(line, file=sys.__stdout__, flush=True)

    def _log(self, metrics: dict[str, float]) -> None:
        if self.client is None:
            return
        now, step = int(time.time() * 1000), int(metrics["epoch"])
        self.client.log_batch(self.run_id, metrics=[
            Metric(key, float(value), now, step) for key, value in metrics.items() if key != "epoch"
        ])

