"""Assembles a PLNLP experiment from its config and runs it: the same code
for one process and for each DDP worker."""
import copy
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import Tensor, nn

from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DatasetInfo, LinkSplit
from plnlp_core.edge_set import EdgeSet
from plnlp_core.evaluation import evaluate
from plnlp_core.fit_state import FitState
from plnlp_core.graph import (
    TrainingGraph,
    WalkRounds,
    append_pairs,
    build_adjacency,
    normalized_margins,
    select_training_edges,
)
from plnlp_core.losses import WEIGHTED_LOSSES
from plnlp_core.nn import ENCODER_LEVELS, GNNEncoder, NodeInput, PLNLPModel
from plnlp_core.random_walk import random_walk_pairs, walk_starts
from plnlp_core.sampling import SAMPLERS, NegativeSampler
from plnlp_core.training import (
    StepOptions,
    check_precision,
    set_matmul_precision,
    train_epoch,
)


def build_model(config: PLNLPConfig, info: DatasetInfo, num_nodes: int) -> PLNLPModel:
    """The encoder and predictor ``config`` names, sized for the dataset, at
    the node or edge level (``encoder_level``)."""
    node_input = NodeInput(config.node_input, num_nodes, config.embedding_dim, info.feature_dim)
    encoder = GNNEncoder(
        config.encoder, node_input.out_channels, config.hidden_channels,
        config.encoder_layers, config.dropout, config.activate_last_layer,
    )
    return ENCODER_LEVELS.get(config.encoder_level).from_config(config, node_input, encoder)


def input_edges(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor | None]:
    """The observed edges training starts from and their weights: training
    edges from ``min_train_year`` on, plus the validation edges when
    ``valid_as_input``."""
    edges, weights = select_training_edges(
        split.train_pos, split.train_weight, split.train_year, config.min_train_year,
    )
    if config.valid_as_input:
        edges, weights = append_pairs(edges, weights, split.valid_pos, split.valid_weight)
    return edges, weights


def build_input_adjacency(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor]:
    """The message-passing adjacency over the observed edges, and degrees."""
    edges, _ = input_edges(split, config)
    return build_adjacency(edges, split.num_nodes)


def build_training_graph(
    split: LinkSplit, config: PLNLPConfig, walks: WalkRounds | None = None,
) -> TrainingGraph:
    """Message-passing adjacency over the observed edges, the positives of
    :func:`training_positives`, and the random-walk rounds ``walks``."""
    adj, degree = build_input_adjacency(split, config)
    return TrainingGraph(adj, degree, *training_positives(split, config), walks)


def training_positives(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor | None]:
    """The observed edges ranked every epoch, with their margins when the
    loss reads any: the edge weights (``edge_margin: raw``) or
    :func:`normalized_margins` (the paper). None at all with
    ``walk_positives: walks``, where the walk pairs alone are ranked (the
    authors' code)."""
    if config.walk_positives == "walks":
        return torch.empty(0, 2, dtype=torch.long), None
    edges, weights = input_edges(split, config)
    if config.loss not in WEIGHTED_LOSSES:
        return edges, None
    if config.edge_margin == "normalized":
        return edges, normalized_margins(edges, weights, split.num_nodes)
    return edges, weights


def build_walk_rounds(
    split: LinkSplit, config: PLNLPConfig, generator: torch.Generator | None = None,
) -> list[tuple[Tensor, Tensor]]:
    """``config.walk_rounds`` independent sets of random-walk pairs over the
    observed graph, in memory (the ``augment`` stage writes them as Parquet)."""
    edges, _ = input_edges(split, config)
    adj, _ = build_adjacency(edges, split.num_nodes)
    starts = walk_starts(config.walk_starts, split.num_nodes, edges)
    return [random_walk_pairs(adj, starts, config.walk_length, generator)
            for _ in range(config.walk_rounds)]


def build_sampler(
    config: PLNLPConfig, split: LinkSplit, graph: TrainingGraph, device: torch.device | None = None,
) -> NegativeSampler:
    """The negative sampler ``config`` names, avoiding every observed edge,
    drawing on ``device`` (where the positives live)."""
    observed, _ = input_edges(split, config)
    edge_set = EdgeSet(observed, split.num_nodes, undirected=not split.info.directed)
    edge_set.to(device or "cpu")
    return SAMPLERS.get(config.sampler).from_settings(edge_set, graph.degree, config)


@dataclass
class EpochResult:
    """What one epoch produced. ``score_gap`` is the mean margin of
    positives over their negatives in training (see :class:`RankingStats`);
    ``metrics`` is empty on epochs without evaluation; ``best_state`` is set
    when validation improved; ``snapshot()`` captures the state to go on
    from after this epoch."""

    epoch: int
    train_loss: float
    seconds: float
    score_gap: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    best_state: dict[str, Tensor] | None = None
    snapshot: Callable[[], FitState] | None = None


@dataclass
class FitResult:
    """The best validation epoch, its metrics and the model's state then."""

    best_epoch: int = 0
    best_metrics: dict[str, float] = field(default_factory=dict)
    best_state: dict[str, Tensor] | None = None
    history: list[EpochResult] = field(default_factory=list)


def fit(
    model: nn.Module, config: PLNLPConfig, split: LinkSplit, graph: TrainingGraph,
    world_size: int = 1, rank: int = 0,
    on_epoch: Callable[[EpochResult], None] | None = None, resume: FitState | None = None,
) -> FitResult:
    """Trains for ``config.epochs`` and evaluates valid and test every
    ``config.eval_every`` epochs (and after the last) on ``rank`` 0. The
    best epoch is chosen by validation alone (OGB protocol): the first of
    equal validation scores, or the last with ``select_best: last``.

    ``model`` may be wrapped in :class:`DistributedDataParallel`;
    ``graph.positives`` is then this worker's shard. With ``resume``,
    training goes on after ``resume.epoch`` as if it had never stopped.
    """
    core = model.module if hasattr(model, "module") else model
    device = next(core.parameters()).device
    check_precision(config.precision, device)
    x = None if split.x is None else split.x.to(device)
    graph = graph.to(device)
    sampler = build_sampler(config, split, graph, device)
    options = StepOptions.from_config(config, world_size)
    set_matmul_precision(config.precision)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    schedule = learning_rate_schedule(optimizer, config)
    generator = torch.Generator(device).manual_seed(config.seed * 1000 + rank)
    eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                   "test": (split.test_pos, split.test_neg)}
    main_key = f"valid_{split.info.main_metric_key}"
    batch_size = max(config.batch_size // world_size, 1)
    result = FitResult()
    if resume is not None:
        resume.restore(core, optimizer, schedule, generator, sampler)
        result.best_epoch, result.best_metrics = resume.best_epoch, resume.best_metrics
        result.best_state = resume.best_state
    for epoch in range((resume.epoch if resume else 0) + 1, config.epochs + 1):
        start = time.perf_counter()
        positives, weights = graph.epoch_positives(epoch)
        batches = agreed_batches(positives, batch_size, config.max_batches_per_epoch, world_size)
        stats = train_epoch(model, optimizer, x, graph.adj, positives, weights, sampler,
                            options, batch_size, generator, batches)
        if schedule is not None:
            schedule.step()
        epoch_result = EpochResult(epoch, stats.loss, time.perf_counter() - start,
                                   stats.score_gap)
        if rank == 0 and (epoch % config.eval_every == 0 or epoch == config.epochs):
            epoch_result.metrics = evaluate(core, split.info, x, graph.adj, eval_splits,
                                            config.eval_batch_size)
            best = result.best_metrics.get(main_key, float("-inf"))
            if improves(epoch_result.metrics[main_key], best, config.select_best):
                epoch_result.best_state = copy.deepcopy(core.state_dict())
                result.best_epoch, result.best_metrics = epoch, epoch_result.metrics
                result.best_state = epoch_result.best_state
        epoch_result.snapshot = functools.partial(
            FitState.capture, epoch, core, optimizer, schedule, generator, sampler,
            result.best_epoch, result.best_metrics, result.best_state)
        result.history.append(epoch_result)
        if on_epoch is not None:
            on_epoch(epoch_result)
    return result


def improves(score: float, best: float, select_best: str) -> bool:
    """Whether ``score`` replaces ``best``: strictly better (``"first"``), or
    at least as good (``"last"``, the authors' rule for collab, whose
    validation Hits@50 saturates at 100 %)."""
    return score >= best if select_best == "last" else score > best


def learning_rate_schedule(
    optimizer: torch.optim.Optimizer, config: PLNLPConfig,
) -> torch.optim.lr_scheduler.LRScheduler | None:
    r"""``lr_decay: linear``, the authors' decay after each epoch :math:`e`
    of :math:`E`: :math:`\eta_e = \eta \max(1 - e / E, 10^{-4})`."""
    if config.lr_decay == "none":
        return None
    epochs = config.epochs
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda e: max(1.0 - e / epochs, 1e-4))


def agreed_batches(
    positives: Tensor, batch_size: int, limit: int | None, world_size: int,
) -> int:
    """Batches this epoch: a full pass over ``positives`` (at most
    ``limit``), the fewest of any DDP worker, so that every worker takes
    the same number of steps even when their shares differ by a few pairs."""
    batches = -(-positives.size(0) // batch_size)
    if limit is not None:
        batches = min(batches, limit)
    if world_size > 1:
        count = torch.tensor([batches], device=positives.device)
        dist.all_reduce(count, op=dist.ReduceOp.MIN)
        batches = int(count)
    return batches
