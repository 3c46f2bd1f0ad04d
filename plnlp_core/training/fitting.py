"""The epoch loop of a PLNLP experiment, :func:`fit`: the same code for one
process and for each DDP worker."""
import copy
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import Tensor, nn

from plnlp_core.assembly import build_optimizer, build_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.graph import TrainingGraph
from plnlp_core.nn.model import unwrap
from plnlp_core.sampling.neighbors import NeighborSampler
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import (
    StepOptions,
    check_precision,
    resolve_precision,
    set_matmul_precision,
    train_epoch,
)
from plnlp_core.training.fit_state import FitState


@dataclass
class EpochResult:
    """What one epoch produced. ``score_gap`` is the mean margin of
    positives over their negatives in training (see :class:`RankingStats`);
    ``metrics`` is empty on epochs without evaluation; ``improved`` says
    whether validation improved, and then ``best_state`` is the model's
    state; ``snapshot()`` captures the state to go on from after this
    epoch. ``best_state`` and ``snapshot`` are there for ``on_epoch`` and
    dropped once it returns, so that the history holds no copy of the
    model (a large graph's embedding, per improving epoch)."""

    epoch: int
    train_loss: float
    seconds: float
    score_gap: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    improved: bool = False
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
    ``graph.positives`` is then this worker's shard. With ``config.fanouts``
    each step encodes its pairs' sampled neighbourhoods
    (:class:`~plnlp_core.sampling.neighbors.NeighborSampler`); evaluation
    encodes every node over all its neighbours, as full batch does. With ``resume``,
    training goes on after ``resume.epoch`` as if it had never stopped.
    """
    core = unwrap(model)
    device = next(core.parameters()).device
    config = config.replace(precision=resolve_precision(config.precision, device))
    check_precision(config.precision, device)
    x = None if split.x is None else step_features(split.x, config, device)
    graph = graph.to(device)
    sampler = build_sampler(config, split, graph, device)
    neighbors = None if config.fanouts is None else NeighborSampler(graph.adj, config.fanouts)
    options = StepOptions.from_config(config, world_size)
    set_matmul_precision(config.precision)
    optimizer = build_optimizer(model, config)
    schedule = learning_rate_schedule(optimizer, config)
    generator = torch.Generator(device).manual_seed(config.seed * 1000 + rank)
    eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                   "test": (split.test_pos, split.test_neg)}
    main_key = f"valid_{split.info.main_metric_key}"
    result = FitResult()
    if resume is not None:
        resume.restore(core, optimizer, schedule, generator, sampler)
        result.best_epoch, result.best_metrics = resume.best_epoch, resume.best_metrics
        result.best_state = resume.best_state
    for epoch in range((resume.epoch if resume else 0) + 1, config.epochs + 1):
        start = time.perf_counter()
        positives, weights = graph.epoch_positives(epoch)
        batch_size = config.batch_for(positives.size(0), world_size)
        batches = agreed_batches(positives, batch_size, config.max_batches_per_epoch, world_size)
        stats = train_epoch(model, optimizer, x, graph.adj, positives, weights, sampler,
                            options, batch_size, generator, batches, neighbors)
        if schedule is not None:
            schedule.step()
        epoch_result = EpochResult(epoch, stats.loss, time.perf_counter() - start,
                                   stats.score_gap)
        if rank == 0 and (epoch % config.eval_every == 0 or epoch == config.epochs):
            on_device = None if x is None else x.to(device)  # sampled on a GPU: for this while
            epoch_result.metrics = evaluate(core, split.info, on_device, graph.adj, eval_splits,
                                            config.eval_batch_size)
            best = result.best_metrics.get(main_key, float("-inf"))
            if improves(epoch_result.metrics[main_key], best, config.select_best):
                epoch_result.improved = True
                epoch_result.best_state = copy.deepcopy(core.state_dict())
                result.best_epoch, result.best_metrics = epoch, epoch_result.metrics
                result.best_state = epoch_result.best_state
        epoch_result.snapshot = functools.partial(
            FitState.capture, epoch, core, optimizer, schedule, generator, sampler,
            result.best_epoch, result.best_metrics, result.best_state)
        result.history.append(epoch_result)
        if on_epoch is not None:
            on_epoch(epoch_result)
        epoch_result.best_state = epoch_result.snapshot = None
    return result


def step_features(x: Tensor, config: PLNLPConfig, device: torch.device) -> Tensor:
    """The node features training steps read: on ``device``, except for
    neighbour-sampled steps on a GPU, which gather their nodes' rows from
    pinned host memory (the whole table never moves to the GPU but for
    evaluation)."""
    if config.fanouts is not None and device.type == "cuda":
        return x.pin_memory()
    return x.to(device)


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
