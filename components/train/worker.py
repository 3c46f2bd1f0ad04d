"""Ray Train's per-worker function of the ``train`` stage: everything it
needs arrives in its config, the same on a laptop and on every DDP worker."""
import dataclasses
import json
import logging
import os
from pathlib import Path

import ray.train
import torch.distributed as dist

from components.evaluate import export_best
from components.heart import read_heart_negatives
from components.storage.graph_files import read_adjacency
from components.storage.location import Location
from components.storage.parquet_io import read_node_ids, read_split
from components.storage.stage_cache import local_entry
from components.train.checkpoint_reader import (
    checkpoint_epoch,
    newest_complete,
    stored_checkpoints,
)
from components.train.checkpoint_writer import HISTORY_FILE, TIMING_FILE
from components.train.epoch_reporter import EpochReporter
from components.train.session import RayTrainSession, TrialSession
from components.train.startup import mark
from components.train.walk_rounds import ParquetWalkRounds
from plnlp_core.config import PLNLPConfig
from plnlp_core.nn.edge_level.common_neighbors import summing_choice
from plnlp_core.training.experiment import prepare_experiment, run_experiment
from plnlp_core.training.fit_state import FitState


def train_worker(loop_config: dict) -> None:
    """Ray Train's per-worker function: :func:`train_with` a
    :class:`~components.train.session.RayTrainSession`."""
    train_with(loop_config, RayTrainSession())


def train_with(loop_config: dict, session: "RayTrainSession | TrialSession") -> None:
    """Trains ``loop_config["config"]`` on the split in ``dataset_dir``
    with this worker's share of the positives and of the ``walks`` rounds
    (rows ``rank::world_size``), going on after a restart from the newest
    checkpoint every worker finished writing (:func:`latest_checkpoint`);
    reports as :class:`EpochReporter` says, a sweep's
    ``decision_epochs`` included. Each worker reads the split itself: it
    needs the whole graph for message passing anyway, and its share of the
    positives is then a slice, with no Ray Data pipeline to start. The
    graph's adjacency and the node features are memory-mapped from the
    split's ``.npy`` files, so the workers of one node hold one copy. With
    ``loop_config["export_dir"]``, rank 0 then writes the final metrics and
    the best model's scorer there (see :mod:`components.evaluate`),
    scored on HeaRT's negatives too with ``loop_config["heart"]``."""
    startup: dict[str, float] = {}
    mark("workers", startup)
    config = PLNLPConfig.from_mapping(loop_config["config"])
    quiet_ray_logs()
    rank, world_size = session.rank, session.world_size
    dataset_dir = local_entry(loop_config["dataset_dir"])  # this node's copy, if in a store
    split = read_split(dataset_dir)
    adjacency = read_adjacency(dataset_dir, split.num_nodes)  # mapped: one copy per node
    mark("read_split", startup)
    walks = loop_config["walks"]
    rounds = None if walks is None else ParquetWalkRounds(
        dataclasses.replace(walks, directory=Location(local_entry(walks.directory))), rank,
        world_size)
    experiment = prepare_experiment(config, split, rounds, rank, world_size, adjacency)
    mark("experiment", startup)
    if rank == 0 and config.encoder_level == "edge":  # shown with --verbose
        print("edge level: common neighbours summed by "
              f"{summing_choice(experiment.graph.positives.device)}", flush=True)
    experiment.model = session.prepare_model(experiment.model)
    checkpoint, delivered, stale = latest_checkpoint(session)
    resume, history, epoch_ends = _restore(checkpoint, rank)
    if world_size > 1:
        dist.barrier()  # every worker has chosen its checkpoint before any goes
    if rank == 0:
        for path in stale:  # the workers would write them again
            session.filesystem.delete_dir(path)
    mark("model", startup)
    reporter = EpochReporter(session, config.epochs, config.checkpoint_every,
                             split.info.main_metric_key, history,
                             loop_config.get("decision_epochs", ()),
                             startup if rank == 0 and resume is None else None, epoch_ends,
                             loop_config.get("label"))
    if resume is not None:
        reporter.restarted(resume.epoch, delivered)
    result = run_experiment(experiment, on_epoch=reporter, resume=resume)
    reporter.finish()
    export_dir = loop_config.get("export_dir")
    if rank == 0 and export_dir is not None:
        heart = loop_config.get("heart")
        export_best(experiment.model, result.best_state, result.best_metrics, split,
                    experiment.graph.adj, config,
                    read_node_ids(dataset_dir, split.num_nodes), export_dir,
                    None if heart is None else read_heart_negatives(heart))


def quiet_ray_logs() -> None:
    """Keeps Ray Train's and Ray Data's per-report and per-dataset info lines
    off the console of this process; their warnings and errors still show.
    (Ray 2.60 logs each report under a logger named after its source file,
    made as Ray Train is imported, which a worker of it has been.)"""
    named = [name for name in logging.root.manager.loggerDict
             if name.endswith(".py") and f"{os.sep}ray{os.sep}train{os.sep}" in name]
    for name in ("ray.train", "ray.data", *named):
        logging.getLogger(name).setLevel(logging.WARNING)


def latest_checkpoint(
    session: "RayTrainSession | TrialSession",
) -> tuple[ray.train.Checkpoint | None, int, list[str]]:
    """The checkpoint a (re)started worker goes on from: the newest one in
    the run's storage that every worker finished writing, whether or not
    Train's controller took its report (the worker that made it may have
    died first, or not reported it: see :class:`EpochReporter`); else the
    one the controller holds (written before checkpoints had manifests).
    Also the epoch of the controller's (0: none), whose report put every
    epoch up to it in MLflow, and the paths of the half-written checkpoints
    newer than the one chosen."""
    held = session.held_checkpoint()
    delivered = (checkpoint_epoch(held.path) or 0) if held is not None else 0
    stored = stored_checkpoints(session.filesystem, session.folder, session.world_size)
    newest = newest_complete(stored)
    stale = [found.path for found in stored if newest is None or found.epoch > newest.epoch]
    if newest is None:
        return held, delivered, stale
    return ray.train.Checkpoint(newest.path, session.filesystem), delivered, stale


def _restore(
    checkpoint: ray.train.Checkpoint | None, rank: int,
) -> tuple[FitState | None, list[dict[str, float]], list[float]]:
    """The training state, the metrics history and when each of its epochs
    ended, of ``checkpoint``."""
    if checkpoint is None:
        return None, [], []
    with checkpoint.as_directory() as directory:
        state = FitState.load(Path(directory), rank)
        history = json.loads((Path(directory) / HISTORY_FILE).read_text())
        timing = json.loads((Path(directory) / TIMING_FILE).read_text())
    return state, history, timing.get("epoch_ends", [])
