"""Assembles a PLNLP experiment from its config and runs it: the same code
for one process and for each DDP worker."""
import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DatasetInfo, LinkSplit
from plnlp_core.edge_set import EdgeSet
from plnlp_core.evaluation import evaluate
from plnlp_core.graph import TrainingGraph, append_pairs, build_adjacency, select_training_edges
from plnlp_core.losses import LOSSES
from plnlp_core.nn import GNNEncoder, NodeInput, PLNLPModel
from plnlp_core.sampling import SAMPLERS, NegativeSampler
from plnlp_core.training import train_epoch


def build_model(config: PLNLPConfig, info: DatasetInfo, num_nodes: int) -> PLNLPModel:
    """The encoder and predictor ``config`` names, sized for the dataset."""
    node_input = NodeInput(config.node_input, num_nodes, config.embedding_dim, info.feature_dim)
    encoder = GNNEncoder(
        config.encoder, node_input.out_channels, config.hidden_channels,
        config.encoder_layers, config.dropout,
    )
    return PLNLPModel(
        node_input, encoder, config.predictor, config.predictor_hidden,
        config.predictor_layers, config.predictor_dropout,
    )


def input_edges(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor | None]:
    """The observed edges training starts from: training edges from
    ``min_train_year`` on, plus the validation edges when ``valid_as_input``."""
    edges, weights = select_training_edges(
        split.train_pos, split.train_weight, split.train_year, config.min_train_year,
    )
    if config.valid_as_input:
        edges, weights = append_pairs(edges, weights, split.valid_pos, None)
    return edges, weights


def build_training_graph(
    split: LinkSplit, config: PLNLPConfig, walk_pairs: Tensor | None = None,
    walk_weights: Tensor | None = None,
) -> TrainingGraph:
    """Message-passing adjacency over the observed edges, and the
    positives of :func:`training_positives`."""
    edges, _ = input_edges(split, config)
    adj, degree = build_adjacency(edges, split.num_nodes)
    return TrainingGraph(adj, degree, *training_positives(split, config, walk_pairs, walk_weights))


def training_positives(
    split: LinkSplit, config: PLNLPConfig, walk_pairs: Tensor | None = None,
    walk_weights: Tensor | None = None,
) -> tuple[Tensor, Tensor | None]:
    """The pairs to rank and their weights: the observed edges (weight 1, or
    the dataset's) plus any random-walk pairs."""
    edges, weights = input_edges(split, config)
    if walk_pairs is None:
        return edges, weights
    return append_pairs(edges, weights, walk_pairs, walk_weights)


def build_sampler(
    config: PLNLPConfig, split: LinkSplit, graph: TrainingGraph, device: torch.device | None = None,
) -> NegativeSampler:
    """The negative sampler ``config`` names, avoiding every observed edge,
    drawing on ``device`` (where the positives live)."""
    observed, _ = input_edges(split, config)
    edge_set = EdgeSet(observed, split.num_nodes, undirected=not split.info.directed)
    edge_set.to(device or "cpu")
    return SAMPLERS.get(config.sampler).from_graph(edge_set, graph.degree, config.degree_power)


@dataclass
class EpochResult:
    """What one epoch produced. ``metrics`` is empty on epochs without
    evaluation; ``best_state`` is set when validation improved."""

    epoch: int
    train_loss: float
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    best_state: dict[str, Tensor] | None = None


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
    on_epoch: Callable[[EpochResult], None] | None = None,
) -> FitResult:
    """Trains for ``config.epochs`` and evaluates valid and test every
    ``config.eval_every`` epochs (and after the last) on ``rank`` 0. The
    best epoch is chosen by validation alone (OGB protocol).

    ``model`` may be wrapped in :class:`DistributedDataParallel`;
    ``graph.positives`` is then this worker's shard.
    """
    core = model.module if hasattr(model, "module") else model
    device = next(core.parameters()).device
    x = None if split.x is None else split.x.to(device)
    graph = graph.to(device)
    sampler = build_sampler(config, split, graph, device)
    loss_fn = LOSSES.get(config.loss)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator(device).manual_seed(config.seed * 1000 + rank)
    eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                   "test": (split.test_pos, split.test_neg)}
    main_key = f"valid_{split.info.main_metric_key}"
    result = FitResult()
    for epoch in range(1, config.epochs + 1):
        start = time.perf_counter()
        loss = train_epoch(
            model, optimizer, x, graph.adj, graph.positives, graph.weights, sampler, loss_fn,
            config.num_neg, max(config.batch_size // world_size, 1), config.l2, world_size,
            generator,
        )
        epoch_result = EpochResult(epoch, loss, time.perf_counter() - start)
        if rank == 0 and (epoch % config.eval_every == 0 or epoch == config.epochs):
            epoch_result.metrics = evaluate(core, split.info, x, graph.adj, eval_splits,
                                            config.eval_batch_size)
            best = result.best_metrics.get(main_key, float("-inf"))
            if epoch_result.metrics[main_key] > best:
                epoch_result.best_state = copy.deepcopy(core.state_dict())
                result.best_epoch, result.best_metrics = epoch, epoch_result.metrics
                result.best_state = epoch_result.best_state
        result.history.append(epoch_result)
        if on_epoch is not None:
            on_epoch(epoch_result)
    return result
