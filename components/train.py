"""Stage ``train``: Ray Train's ``TorchTrainer`` runs PLNLP on N workers
(DDP); each worker ranks its shard of the positive pairs."""
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ray
import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
from ray.util.debug import log_once

from components.artifacts import DatasetArtifact, TrainArtifact, WalkArtifact
from components.parquet_io import pairs_table, read_split
from components.tracking import EpochLogger
from components.walk_rounds import ParquetWalkRounds
from components.workers import WorkerGroup
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import cache_dir
from plnlp_core.experiment import (
    EpochResult,
    build_input_adjacency,
    build_model,
    fit,
    training_positives,
)
from plnlp_core.fit_state import FitState
from plnlp_core.graph import TrainingGraph
from plnlp_core.losses import WEIGHTED_LOSSES

CHECKPOINT_FILE = "model.pt"
BEST_FILE = "best.json"
BEST_DIR = "best"
HISTORY_FILE = "history.json"
SHAPES_FILE = "shapes.json"
TIMING_FILE = "timing.json"
CHECKPOINTS_TAG = "plnlp.checkpoints"


def checkpoint_root(work_dir: str | None) -> Path:
    """Where runs keep their training checkpoints: ``<work_dir>/runs`` (on a
    cluster, storage every node sees), else ``$PLNLP_CACHE_DIR/runs``."""
    return (Path(work_dir) if work_dir else cache_dir()) / "runs"


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
    log_once("ray_data_progress_manager_disabled")  # Ray Data would say so once, in a warning
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


def train(
    dataset: DatasetArtifact, walks: WalkArtifact | None, config: PLNLPConfig,
    storage: str, workers: WorkerGroup | None = None,
    tracking_uri: str | None = None, run_id: str | None = None, max_failures: int = 3,
    callbacks: list[ray.train.UserCallback] = (),
) -> TrainArtifact:
    """Trains with the DDP ``workers`` and returns the checkpoint of the best
    validation epoch. With ``run_id``, rank 0 logs every epoch's metrics to
    that MLflow run.

    Every ``config.checkpoint_every`` epochs (and after the last) the whole
    training state is checkpointed under ``storage``. When a worker or the
    worker group dies, Ray Train starts a new group up to ``max_failures``
    times, and training goes on from the latest checkpoint; a new call with
    the same ``storage`` and ``run_id`` (``--resume``) does the same.
    ``callbacks`` see every report after the MLflow logger has."""
    trainer = ray.train.torch.TorchTrainer(
        train_worker,
        train_loop_config={
            "config": config.to_dict(), "dataset_dir": dataset.directory, "walks": walks,
        },
        scaling_config=(workers or WorkerGroup()).scaling_config(),
        run_config=ray.train.RunConfig(
            name=f"plnlp-{config.dataset}-{run_id or 'run'}",
            storage_path=str(Path(storage).resolve()),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=1),
            failure_config=ray.train.FailureConfig(max_failures=max_failures),
            callbacks=[*([EpochLogger(tracking_uri, run_id)] if run_id else []), *callbacks],
            logging_config=ray.train.LoggingConfig(log_level="WARNING"),
        ),
        datasets=positives_datasets(dataset, config),
    )
    result = trainer.fit()
    checkpoint = Path(result.checkpoint.path)
    best = json.loads((checkpoint / BEST_DIR / BEST_FILE).read_text())
    history = json.loads((checkpoint / HISTORY_FILE).read_text())
    timing = json.loads((checkpoint / TIMING_FILE).read_text())
    return TrainArtifact(str(checkpoint / BEST_DIR), best["epoch"], best["metrics"], history,
                         timing["fit_seconds"])


def train_worker(loop_config: dict) -> None:
    """Ray Train's per-worker function: everything it needs arrives in
    ``loop_config``, the ``positives`` dataset shard and, after a restart,
    the latest checkpoint."""
    config = PLNLPConfig.from_mapping(loop_config["config"])
    quiet_ray_logs()
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    split = read_split(Path(loop_config["dataset_dir"]))
    adj, degree = build_input_adjacency(split, config)
    walks = loop_config["walks"]
    rounds = None if walks is None else ParquetWalkRounds(walks, rank, world_size)
    graph = TrainingGraph(adj, degree, *_read_positives(config), rounds)
    torch.manual_seed(config.seed)
    model = ray.train.torch.prepare_model(build_model(config, split.info, split.num_nodes))
    resume, history = _restore(ray.train.get_checkpoint(), rank)
    reporter = EpochReporter(config, split.info.main_metric_key, rank, world_size, history)
    if resume is not None:
        reporter.restarted(resume.epoch)
    fit(model, config, split, graph, world_size, rank, on_epoch=reporter, resume=resume)


def quiet_ray_logs() -> None:
    """Keeps Ray Train's and Ray Data's per-report and per-dataset info lines
    off the console of this process; their warnings and errors still show.
    (Ray 2.60 logs each report under a logger named after its source file.)"""
    import ray.train.v2._internal.execution.context as train_context

    for name in ("ray.train", "ray.data", train_context.__file__):
        logging.getLogger(name).setLevel(logging.WARNING)


def _restore(
    checkpoint: ray.train.Checkpoint | None, rank: int,
) -> tuple[FitState | None, list[dict[str, float]]]:
    """The training state and the metrics history of ``checkpoint``."""
    if checkpoint is None:
        return None, []
    with checkpoint.as_directory() as directory:
        state = FitState.load(Path(directory), rank)
        history = json.loads((Path(directory) / HISTORY_FILE).read_text())
    return state, history


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
    """Called after every epoch on every worker: rank 0 prints one progress
    line; every ``checkpoint_every`` epochs (and after the last) each worker
    checkpoints its state through Ray Train, and every other evaluated epoch
    it reports without one; rank 0's reports carry the epochs since the
    previous one (``"epochs"``) for :class:`EpochLogger` and, in a sweep,
    :class:`components.sweep_report.SweepReporter`."""

    def __init__(
        self, config: PLNLPConfig, main_metric: str, rank: int, world_size: int,
        history: list[dict[str, float]] | None = None,
    ) -> None:
        self.config = config
        self.main_metric = main_metric
        self.rank = rank
        self.world_size = world_size
        self.history: list[dict[str, float]] = list(history or [])
        self.pending: list[dict[str, float]] = []
        self.restored_from: int | None = None
        self.first_epoch = len(self.history) + 1
        self.started = time.perf_counter()  # fit starts next

    def restarted(self, epoch: int) -> None:
        """Notes that training goes on after ``epoch``, said with the next report."""
        self.restored_from = epoch
        if self.rank == 0:
            print(f"restarting after epoch {epoch} from its checkpoint", file=sys.__stdout__,
                  flush=True)

    def __call__(self, result: EpochResult) -> None:
        loss, gap = self._global_mean(result.train_loss, result.score_gap)
        metrics = {"epoch": result.epoch, "train_loss": loss, "train_score_gap": gap,
                   "epoch_seconds": result.seconds, **result.metrics}
        if self.rank == 0:
            self.history.append(metrics)
            self.pending.append(metrics)
            self._print(metrics)
        if result.epoch % self.config.checkpoint_every == 0 or result.epoch == self.config.epochs:
            self._checkpoint(result, metrics)
        elif result.epoch % self.config.eval_every == 0:  # a sweep's scheduler judges each one
            self._report(metrics)  # every rank reports (rank 0 alone evaluated)

    def _checkpoint(self, result: EpochResult, metrics: dict[str, float]) -> None:
        state = result.snapshot()
        with tempfile.TemporaryDirectory() as scratch:
            directory = Path(scratch)
            state.save(directory, self.rank)
            if self.rank == 0:
                (directory / HISTORY_FILE).write_text(json.dumps(self.history))
                (directory / SHAPES_FILE).write_text(json.dumps(_shapes(state.model)))
                fit_seconds = time.perf_counter() - self.started
                (directory / TIMING_FILE).write_text(json.dumps({"fit_seconds": fit_seconds}))
                if state.best_state is not None:
                    (directory / BEST_DIR).mkdir()
                    torch.save(state.best_state, directory / BEST_DIR / CHECKPOINT_FILE)
                    best = {"epoch": state.best_epoch, "metrics": state.best_metrics}
                    (directory / BEST_DIR / BEST_FILE).write_text(json.dumps(best))
            self._report(metrics, ray.train.Checkpoint.from_directory(directory))

    def _report(self, metrics: dict[str, float],
                checkpoint: ray.train.Checkpoint | None = None) -> None:
        """Reports ``metrics`` with the epochs since the last report."""
        report = {**metrics, "epochs": self.pending}
        if self.restored_from is not None:
            report["restored_from_epoch"] = self.restored_from
        ray.train.report(report, checkpoint=checkpoint)
        self.pending, self.restored_from = [], None

    def _global_mean(self, *values: float) -> list[float]:
        """Each value's mean over the workers."""
        if self.world_size == 1:
            return list(values)
        total = torch.tensor(values, dtype=torch.float64, device=ray.train.torch.get_device())
        dist.all_reduce(total)  # on the workers' device: NCCL takes no CPU tensors
        return (total / self.world_size).tolist()

    def _print(self, metrics: dict[str, float]) -> None:
        """``epoch 12/500  loss 0.41234  valid_hits_20 0.6123  test_hits_20
        0.5871  2.4 s  ETA 19m32s``: the ETA from the mean wall time of this
        attempt's epochs, evaluations and checkpoints included."""
        epoch, epochs = int(metrics["epoch"]), self.config.epochs
        keys = (f"valid_{self.main_metric}", f"test_{self.main_metric}")
        shown = [f"{key} {metrics[key]:.4f}" for key in keys if key in metrics]
        per_epoch = (time.perf_counter() - self.started) / (epoch - self.first_epoch + 1)
        line = "  ".join([f"epoch {epoch}/{epochs}", f"loss {metrics['train_loss']:.5f}",
                          *shown, f"{metrics['epoch_seconds']:.1f} s",
                          f"ETA {_duration(per_epoch * (epochs - epoch))}"])
        # Ray Train tees a plain print to stdout and its logger; write once.
        print(line, file=sys.__stdout__, flush=True)


def _duration(seconds: float) -> str:
    """``42s``, ``19m32s`` or ``3h05m``."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes \
        else f"{secs}s"


def _shapes(state: dict[str, torch.Tensor]) -> dict[str, object]:
    """The parameter shapes of a model state, and its number of nodes."""
    shapes = {name: list(value.shape) for name, value in state.items()}
    return {"num_nodes": shapes["node_input.embedding.weight"][0]
            if "node_input.embedding.weight" in shapes else None, "shapes": shapes}
