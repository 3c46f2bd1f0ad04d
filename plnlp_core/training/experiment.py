"""One PLNLP experiment, the same for a script, a benchmark and every DDP
worker of the pipeline: :func:`prepare_experiment` builds what training
needs (random-walk rounds when the config uses them, the training graph
with this worker's share of the positives, the model), and
:func:`run_experiment` trains it with :func:`~plnlp_core.training.fitting.fit`."""
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from plnlp_core.assembly import build_model, build_training_graph, build_walk_rounds
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.graph import TrainingGraph, WalkRounds
from plnlp_core.training.fit_state import FitState
from plnlp_core.training.fitting import EpochResult, FitResult, fit
from plnlp_core.training.host_allocator import freed_memory_kept


@dataclass
class Experiment:
    """What :func:`run_experiment` trains.

    Attributes:
        config (PLNLPConfig): The experiment's settings.
        split (LinkSplit): The dataset and its evaluation pairs.
        graph (TrainingGraph): The message-passing graph and this worker's
            positives and walk rounds.
        model (nn.Module): The model, possibly wrapped for DDP.
        rank (int): This worker's rank.
        world_size (int): Number of workers.
    """

    config: PLNLPConfig
    split: LinkSplit
    graph: TrainingGraph
    model: nn.Module
    rank: int = 0
    world_size: int = 1


def prepare_experiment(
    config: PLNLPConfig, split: LinkSplit, walks: WalkRounds | None = None,
    rank: int = 0, world_size: int = 1, adjacency: tuple[Tensor, Tensor] | None = None,
) -> Experiment:
    """The training graph and the model of ``config`` on ``split``.

    Worker ``rank`` of ``world_size`` ranks the positives
    ``rank::world_size``; ``walks`` must be its share already (the
    pipeline's :class:`~components.train.walk_rounds.ParquetWalkRounds`). Without
    ``walks``, a config that uses random walks draws its rounds here, seeded
    by ``config.seed``: the pairs the pipeline's ``augment`` stage writes.
    ``adjacency`` is the training edges' adjacency and degrees the ``load``
    stage wrote (see :func:`~plnlp_core.assembly.build_input_adjacency`).
    The model's weights are drawn from ``config.seed``.
    """
    if walks is None and config.uses_random_walk:
        walks = [(pairs[rank::world_size], weights[rank::world_size])
                 for pairs, weights in build_walk_rounds(split, config)]
    graph = build_training_graph(split, config, walks, rank, world_size, adjacency)
    torch.manual_seed(config.seed)
    model = build_model(config, split.info, split.num_nodes)
    return Experiment(config, split, graph, model, rank, world_size)


def run_experiment(
    experiment: Experiment, on_epoch: Callable[[EpochResult], None] | None = None,
    resume: FitState | None = None,
) -> FitResult:
    """Trains ``experiment`` for ``config.epochs``, evaluating on rank 0
    (see :func:`~plnlp_core.training.fitting.fit`), going on after ``resume``.
    Freed host memory is kept for the next step meanwhile
    (:func:`~plnlp_core.training.host_allocator.freed_memory_kept`)."""
    with freed_memory_kept():
        return fit(experiment.model, experiment.config, experiment.split, experiment.graph,
                   experiment.world_size, experiment.rank, on_epoch=on_epoch, resume=resume)
