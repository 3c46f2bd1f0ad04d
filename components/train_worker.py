"""Ray Train's per-worker function of the ``train`` stage: everything it
needs arrives in its config, the same on a laptop and on every DDP worker."""
import dataclasses
import json
import logging
from pathlib import Path

import ray.train
import ray.train.torch
import torch

from components.checkpoints import HISTORY_FILE
from components.epoch_reporter import EpochReporter
from components.final_export import export_best
from components.parquet_io import read_node_ids, read_split
from components.stage_cache import local_entry
from components.startup import mark
from components.storage import location
from components.walk_rounds import ParquetWalkRounds
from plnlp_core.assembly import build_input_adjacency, build_model, training_positives
from plnlp_core.config import PLNLPConfig
from plnlp_core.fit_state import FitState
from plnlp_core.fitting import fit
from plnlp_core.graph import TrainingGraph


def train_worker(loop_config: dict) -> None:
    """Trains ``loop_config["config"]`` on the split in ``dataset_dir``
    with this worker's share of the positives and of the ``walks`` rounds
    (rows ``rank::world_size``), going on from the latest checkpoint after a
    restart; reports as :class:`EpochReporter` says, a sweep's
    ``decision_epochs`` included. Each worker reads the split itself: it
    needs the whole graph for message passing anyway, and its share of the
    positives is then a slice, with no Ray Data pipeline to start. With
    ``loop_config["export_dir"]``, rank 0 then writes the final metrics and
    the best model's scorer there (see :mod:`components.final_export`)."""
    startup: dict[str, float] = {}
    mark("workers", startup)
    config = PLNLPConfig.from_mapping(loop_config["config"])
    quiet_ray_logs()
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    dataset_dir = local_entry(loop_config["dataset_dir"])  # this node's copy, if in a store
    split = read_split(dataset_dir)
    mark("read_split", startup)
    adj, degree = build_input_adjacency(split, config)
    positives, weights = training_positives(split, config)
    walks = loop_config["walks"]
    rounds = None if walks is None else ParquetWalkRounds(
        dataclasses.replace(walks, directory=str(local_entry(walks.directory))), rank, world_size)
    graph = TrainingGraph(adj, degree, positives[rank::world_size],
                          None if weights is None else weights[rank::world_size], rounds)
    mark("adjacency", startup)
    torch.manual_seed(config.seed)
    model = ray.train.torch.prepare_model(build_model(config, split.info, split.num_nodes))
    resume, history = _restore(ray.train.get_checkpoint(), rank)
    mark("model", startup)
    reporter = EpochReporter(config.epochs, config.checkpoint_every, split.info.main_metric_key,
                             rank, world_size, history, loop_config.get("decision_epochs", ()),
                             startup if rank == 0 and resume is None else None)
    if resume is not None:
        reporter.restarted(resume.epoch)
    result = fit(model, config, split, graph, world_size, rank, on_epoch=reporter,
                 resume=resume)
    export_dir = loop_config.get("export_dir")
    if rank == 0 and export_dir is not None:
        export_best(model, result.best_state, result.best_metrics, split, adj, config,
                    read_node_ids(dataset_dir, split.num_nodes), location(export_dir))


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
